// CM messages on the wire: round trips of every message type with every field,
// golden bytes (hand-written from IBA 12.6 / Wireshark's dissector offsets)
// for REQ, REP and REJ, private-data lengths at 0 / max / max + 1, every
// CmError, no over-read of a truncated MAD or frame, and the full RoCEv2 frame
// (UD SEND Only to QP1, DETH, MAD, ICRC) through parse_packet.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "common/reference_crc.hpp"
#include "wire/cm.hpp"
#include "wire/packet.hpp"

namespace dpdat::wire {
namespace {

using Mad = std::array<uint8_t, kMadSize>;

Mad encode(const CmMessage& m) {
  Mad mad;
  EXPECT_TRUE(write_cm_mad(m, mad)) << cm_msg_name(m.type);
  return mad;
}

CmError decode(const Mad& mad, CmMessage& out) { return parse_cm(mad, out); }

void fill_pdata(CmMessage& m, size_t len, uint8_t seed) {
  m.pdata_len = static_cast<uint8_t>(len);
  for (size_t i = 0; i < len; ++i) m.pdata[i] = static_cast<uint8_t>(seed + i * 13);
}

// Every field set, to a value that is not its default and uses its full width.
CmMessage full(CmMsg t, size_t pdata_len) {
  CmMessage m;
  m.type = t;
  m.tid = 0xF1E2D3C4B5A69788ull;
  m.local_comm_id = 0x89ABCDEF;
  m.remote_comm_id = 0xFEDCBA98;
  m.service_id = 0x8877665544332211ull;
  m.ca_guid = 0x0002C90300ABCDEFull;
  m.qpn = 0xFEDCBA;
  m.start_psn = 0xABCDEF;
  m.responder_resources = 0xC8;
  m.initiator_depth = 0x9B;
  m.path_mtu = 5;
  m.retry_count = 6;
  m.rnr_retry = 5;
  m.local_cm_resp_timeout = 31;
  m.remote_cm_resp_timeout = 17;
  m.max_cm_retries = 14;
  m.ack_timeout = 19;
  m.src_ip = 0xC0A80A01;
  m.dst_ip = 0xC0A80A02;
  m.src_port = 0xC35B;
  m.rej_reason = CmRejReason::kInvalidServiceId;
  m.rej_msg = kCmMsgOther;
  m.service_timeout = 29;
  fill_pdata(m, pdata_len, 0x40);
  return m;
}

// What a decoder must give back for `f`: the fields its type carries, every
// other field at its default.
CmMessage carried(const CmMessage& f) {
  CmMessage e;
  e.type = f.type;
  e.tid = f.tid;
  e.local_comm_id = f.local_comm_id;
  e.pdata_len = f.pdata_len;
  std::copy_n(f.pdata.begin(), f.pdata_len, e.pdata.begin());
  if (f.type != CmMsg::kReq) e.remote_comm_id = f.remote_comm_id;
  switch (f.type) {
    case CmMsg::kReq:
      e.service_id = f.service_id;
      e.ca_guid = f.ca_guid;
      e.qpn = f.qpn;
      e.start_psn = f.start_psn;
      e.responder_resources = f.responder_resources;
      e.initiator_depth = f.initiator_depth;
      e.path_mtu = f.path_mtu;
      e.retry_count = f.retry_count;
      e.rnr_retry = f.rnr_retry;
      e.local_cm_resp_timeout = f.local_cm_resp_timeout;
      e.remote_cm_resp_timeout = f.remote_cm_resp_timeout;
      e.max_cm_retries = f.max_cm_retries;
      e.ack_timeout = f.ack_timeout;
      e.src_ip = f.src_ip;
      e.dst_ip = f.dst_ip;
      e.src_port = f.src_port;
      break;
    case CmMsg::kMra:
      e.rej_msg = f.rej_msg;
      e.service_timeout = f.service_timeout;
      break;
    case CmMsg::kRej:
      e.rej_msg = f.rej_msg;
      e.rej_reason = f.rej_reason;
      break;
    case CmMsg::kRep:
      e.qpn = f.qpn;
      e.start_psn = f.start_psn;
      e.responder_resources = f.responder_resources;
      e.initiator_depth = f.initiator_depth;
      e.rnr_retry = f.rnr_retry;
      e.path_mtu = f.path_mtu;
      e.ca_guid = f.ca_guid;
      break;
    case CmMsg::kDreq:
      e.qpn = f.qpn;
      break;
    case CmMsg::kRtu:
    case CmMsg::kDrep:
      break;
  }
  return e;
}

void expect_same(const CmMessage& got, const CmMessage& want) {
  EXPECT_EQ(got.type, want.type);
  EXPECT_EQ(got.tid, want.tid);
  EXPECT_EQ(got.local_comm_id, want.local_comm_id);
  EXPECT_EQ(got.remote_comm_id, want.remote_comm_id);
  EXPECT_EQ(got.service_id, want.service_id);
  EXPECT_EQ(got.ca_guid, want.ca_guid);
  EXPECT_EQ(got.qpn, want.qpn);
  EXPECT_EQ(got.start_psn, want.start_psn);
  EXPECT_EQ(got.responder_resources, want.responder_resources);
  EXPECT_EQ(got.initiator_depth, want.initiator_depth);
  EXPECT_EQ(got.path_mtu, want.path_mtu);
  EXPECT_EQ(got.retry_count, want.retry_count);
  EXPECT_EQ(got.rnr_retry, want.rnr_retry);
  EXPECT_EQ(got.local_cm_resp_timeout, want.local_cm_resp_timeout);
  EXPECT_EQ(got.remote_cm_resp_timeout, want.remote_cm_resp_timeout);
  EXPECT_EQ(got.max_cm_retries, want.max_cm_retries);
  EXPECT_EQ(got.ack_timeout, want.ack_timeout);
  EXPECT_EQ(got.src_ip, want.src_ip);
  EXPECT_EQ(got.dst_ip, want.dst_ip);
  EXPECT_EQ(got.src_port, want.src_port);
  EXPECT_EQ(got.rej_reason, want.rej_reason);
  EXPECT_EQ(got.rej_msg, want.rej_msg);
  EXPECT_EQ(got.service_timeout, want.service_timeout);
  EXPECT_EQ(got.pdata_len, want.pdata_len);
  EXPECT_EQ(got.pdata, want.pdata);
  EXPECT_TRUE(got == want);
}

// Bytes of `mad` from `off` on equal `want`.
::testing::AssertionResult bytes_at(const Mad& mad, size_t off, std::vector<uint8_t> want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (mad[off + i] != want[i])
      return ::testing::AssertionFailure() << "MAD byte " << off + i << " is 0x" << std::hex
                                           << int{mad[off + i]} << ", want 0x" << int{want[i]};
  return ::testing::AssertionSuccess();
}

// ------------------------------------------------------------ table

TEST(CmWireTable, PdataAreasAndNames) {
  EXPECT_EQ(cm_pdata_max(CmMsg::kReq), 92u);
  EXPECT_EQ(cm_pdata_max(CmMsg::kMra), 222u);
  EXPECT_EQ(cm_pdata_max(CmMsg::kRej), 148u);
  EXPECT_EQ(cm_pdata_max(CmMsg::kRep), 196u);
  EXPECT_EQ(cm_pdata_max(CmMsg::kRtu), 224u);
  EXPECT_EQ(cm_pdata_max(CmMsg::kDreq), 220u);
  EXPECT_EQ(cm_pdata_max(CmMsg::kDrep), 224u);
  EXPECT_EQ(cm_pdata_max(static_cast<CmMsg>(0x0017)), 0u);
  EXPECT_EQ(cm_pdata_max(static_cast<CmMsg>(0x000F)), 0u);
  for (CmMsg t : kAllCmMsgs) EXPECT_LE(cm_pdata_max(t), kCmMaxPdata);
  EXPECT_EQ(cm_msg_name(CmMsg::kReq), "REQ");
  EXPECT_EQ(cm_msg_name(CmMsg::kDrep), "DREP");
  EXPECT_EQ(cm_msg_name(static_cast<CmMsg>(0x0001)), "unknown");
  for (size_t i = 0; i < static_cast<size_t>(CmError::kCount); ++i)
    for (size_t j = i + 1; j < static_cast<size_t>(CmError::kCount); ++j)
      EXPECT_NE(cm_error_name(static_cast<CmError>(i)), cm_error_name(static_cast<CmError>(j)));
  EXPECT_EQ(kCmFrameSize, 322u);
  EXPECT_EQ(cm_mtu_enum(2048), 4);
  EXPECT_EQ(cm_mtu_enum(1000), 0);
  EXPECT_EQ(cm_mtu_bytes(1), 256u);
  EXPECT_EQ(cm_mtu_bytes(0), 0u);
  EXPECT_EQ(cm_mtu_bytes(6), 0u);
}

// ------------------------------------------------------------ round trips

TEST(CmWireRoundTrip, EveryTypeEveryField) {
  for (CmMsg t : kAllCmMsgs) {
    const size_t max = cm_pdata_max(t);
    for (size_t len : {size_t{0}, size_t{1}, size_t{37}, max - 1, max}) {
      SCOPED_TRACE(std::string(cm_msg_name(t)) + " pdata " + std::to_string(len));
      const CmMessage m = full(t, len);
      const Mad mad = encode(m);
      CmMessage got;
      ASSERT_EQ(decode(mad, got), CmError::kOk);
      expect_same(got, carried(m));
      // The MAD header is the same for every message.
      EXPECT_TRUE(bytes_at(mad, 0, {0x01, 0x07, 0x02, 0x03, 0, 0, 0, 0}));
      EXPECT_TRUE(bytes_at(mad, 8, {0xF1, 0xE2, 0xD3, 0xC4, 0xB5, 0xA6, 0x97, 0x88}));
      EXPECT_EQ(mad[16], 0x00);
      EXPECT_EQ(mad[17], static_cast<uint8_t>(t));
      EXPECT_TRUE(bytes_at(mad, 20, {0, 0, 0, 0}));  // attribute modifier
      // Writing what was decoded gives the same bytes.
      EXPECT_EQ(encode(got), mad);
    }
  }
}

TEST(CmWireRoundTrip, DefaultsAndRejReasons) {
  for (CmMsg t : kAllCmMsgs) {
    CmMessage m;
    m.type = t;
    CmMessage got;
    ASSERT_EQ(decode(encode(m), got), CmError::kOk) << cm_msg_name(t);
    expect_same(got, carried(m));
  }
  for (uint16_t r = 1; r <= 33; ++r) {
    CmMessage m;
    m.type = CmMsg::kRej;
    m.rej_reason = static_cast<CmRejReason>(r);
    for (uint8_t which : {kCmMsgReq, kCmMsgRep, kCmMsgOther}) {
      m.rej_msg = which;
      CmMessage got;
      ASSERT_EQ(decode(encode(m), got), CmError::kOk);
      EXPECT_EQ(got.rej_reason, m.rej_reason);
      EXPECT_EQ(got.rej_msg, which);
    }
  }
  EXPECT_EQ(static_cast<uint16_t>(CmRejReason::kTimeout), 4);  // IBA table 103
  EXPECT_EQ(static_cast<uint16_t>(CmRejReason::kConsumerReject), 28);
}

TEST(CmWireRoundTrip, WideValuesAreMaskedToTheirFields) {
  CmMessage m = full(CmMsg::kReq, 0);
  m.qpn = 0xFF123456;
  m.start_psn = 0x7F654321;
  m.path_mtu = 0x13;               // 4 bits
  m.retry_count = 0x0F;            // 3 bits
  m.rnr_retry = 0x09;              // 3 bits
  m.local_cm_resp_timeout = 0x3F;  // 5 bits
  m.max_cm_retries = 0x1E;         // 4 bits
  CmMessage got;
  ASSERT_EQ(decode(encode(m), got), CmError::kOk);
  EXPECT_EQ(got.qpn, 0x123456u);
  EXPECT_EQ(got.start_psn, 0x654321u);
  EXPECT_EQ(got.path_mtu, 3);
  EXPECT_EQ(got.retry_count, 7);
  EXPECT_EQ(got.rnr_retry, 1);
  EXPECT_EQ(got.local_cm_resp_timeout, 31);
  EXPECT_EQ(got.max_cm_retries, 14);
  // The neighbours of the masked fields are untouched.
  EXPECT_EQ(got.responder_resources, m.responder_resources);
  EXPECT_EQ(got.remote_cm_resp_timeout, m.remote_cm_resp_timeout);
}

// ------------------------------------------------------------ golden bytes

TEST(CmWireGolden, Req) {
  CmMessage m;
  m.type = CmMsg::kReq;
  m.tid = 0x0102030405060708ull;
  m.local_comm_id = 0x11223344;
  m.service_id = 0x1020304050607080ull;
  m.ca_guid = 0xA1A2A3A4A5A6A7A8ull;
  m.qpn = 0x00ABCD;
  m.responder_resources = 4;
  m.initiator_depth = 3;
  m.remote_cm_resp_timeout = 20;
  m.start_psn = 0x123456;
  m.local_cm_resp_timeout = 21;
  m.retry_count = 6;
  m.path_mtu = 4;
  m.rnr_retry = 7;
  m.max_cm_retries = 15;
  m.ack_timeout = 14;
  m.src_ip = 0x0A000001;  // 10.0.0.1
  m.dst_ip = 0x0A000002;
  m.src_port = 0x9C41;  // 40001
  m.pdata_len = 3;
  m.pdata[0] = 0xDE;
  m.pdata[1] = 0xAD;
  m.pdata[2] = 0x01;
  Mad want{};
  const std::vector<std::pair<size_t, std::vector<uint8_t>>> set = {
      // MAD header: base 1, class CM, class version 2, Send, status 0,
      // class specific 0, TID, attribute 0x0010, reserved, modifier 0.
      {0, {0x01, 0x07, 0x02, 0x03, 0x00, 0x00, 0x00, 0x00}},
      {8, {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}},
      {16, {0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
      // CM REQ, MAD byte 24 + n.
      {24 + 0, {0x11, 0x22, 0x33, 0x44}},  // local comm ID
      // reserved: dpdat's pdata length 3, 0, the source port 40001
      {24 + 4, {0x03, 0x00, 0x9C, 0x41}},
      {24 + 8, {0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80}},   // service ID
      {24 + 16, {0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8}},  // local CA GUID
      {24 + 24, {0, 0, 0, 0, 0, 0, 0, 0}},                          // reserved, local Q_Key
      {24 + 32, {0x00, 0xAB, 0xCD, 0x04}},  // local QPN, responder resources
      {24 + 36, {0x00, 0x00, 0x00, 0x03}},  // local EECN, initiator depth
      // remote EECN; remote CM response timeout 20 (10100), RC (00), no e2e FC (0)
      {24 + 40, {0x00, 0x00, 0x00, 0xA0}},
      // starting PSN; local CM response timeout 21 (10101), retry count 6 (110)
      {24 + 44, {0x12, 0x34, 0x56, 0xAE}},
      {24 + 48, {0xFF, 0xFF}},              // P_Key
      {24 + 50, {0x47}},                    // path MTU 4 (0100), RDC 0, RNR retry 7 (111)
      {24 + 51, {0xF0}},                    // max CM retries 15, SRQ 0, extended transport 0
      {24 + 52, {0x00, 0x00, 0x00, 0x00}},  // primary local / remote LID
      // primary local GID ::ffff:10.0.0.1, remote GID ::ffff:10.0.0.2
      {24 + 56, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0x0A, 0x00, 0x00, 0x01}},
      {24 + 72, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0x0A, 0x00, 0x00, 0x02}},
      // flow label / rate 0, traffic class 0, hop limit 64, SL 0, ACK timeout 14 (01110)
      {24 + 88, {0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x70}},
      {24 + 140, {0xDE, 0xAD, 0x01}},  // private data
  };
  for (const auto& [off, bytes] : set) std::copy(bytes.begin(), bytes.end(), want.data() + off);
  const Mad got = encode(m);
  for (size_t i = 0; i < kMadSize; ++i) EXPECT_EQ(got[i], want[i]) << "MAD byte " << i;
}

TEST(CmWireGolden, Rep) {
  CmMessage m;
  m.type = CmMsg::kRep;
  m.tid = 0x0102030405060708ull;
  m.local_comm_id = 0x55667788;
  m.remote_comm_id = 0x11223344;
  m.qpn = 0x000011;
  m.start_psn = 0xFFFF00;
  m.responder_resources = 1;
  m.initiator_depth = 2;
  m.rnr_retry = 6;
  m.ca_guid = 0xB1B2B3B4B5B6B7B8ull;
  fill_pdata(m, 196, 0);
  Mad want{};
  const std::vector<std::pair<size_t, std::vector<uint8_t>>> set = {
      {0, {0x01, 0x07, 0x02, 0x03, 0x00, 0x00, 0x00, 0x00}},
      {8, {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}},
      {16, {0x00, 0x13, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
      {24 + 0, {0x55, 0x66, 0x77, 0x88}},   // local comm ID
      {24 + 4, {0x11, 0x22, 0x33, 0x44}},   // remote comm ID
      {24 + 8, {0x00, 0x00, 0x00, 0x00}},   // local Q_Key
      {24 + 12, {0x00, 0x00, 0x11, 196}},   // local QPN, reserved: dpdat's pdata length
      {24 + 16, {0x00, 0x00, 0x00, 0x00}},  // local EECN, reserved
      {24 + 20, {0xFF, 0xFF, 0x00, 0x00}},  // starting PSN, reserved
      // resp. resources, init. depth, 0, RNR retry 6 (110) + dpdat's path MTU 3 (1024) in the
      // reserved low bits
      {24 + 24, {0x01, 0x02, 0x00, 0xC3}},
      {24 + 28, {0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8}},  // local CA GUID
  };
  for (const auto& [off, bytes] : set) std::copy(bytes.begin(), bytes.end(), want.data() + off);
  for (size_t i = 0; i < 196; ++i) want[24 + 36 + i] = static_cast<uint8_t>(i * 13);
  const Mad got = encode(m);
  for (size_t i = 0; i < kMadSize; ++i) EXPECT_EQ(got[i], want[i]) << "MAD byte " << i;
}

TEST(CmWireGolden, Rej) {
  CmMessage m;
  m.type = CmMsg::kRej;
  m.tid = 0x0102030405060708ull;
  m.local_comm_id = 0x55667788;
  m.remote_comm_id = 0x11223344;
  m.rej_msg = kCmMsgRep;
  m.rej_reason = CmRejReason::kConsumerReject;
  m.pdata_len = 2;
  m.pdata[0] = 0xAB;
  m.pdata[1] = 0xCD;
  Mad want{};
  const std::vector<std::pair<size_t, std::vector<uint8_t>>> set = {
      {0, {0x01, 0x07, 0x02, 0x03, 0x00, 0x00, 0x00, 0x00}},
      {8, {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}},
      {16, {0x00, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
      {24 + 0, {0x55, 0x66, 0x77, 0x88}},  // local comm ID
      {24 + 4, {0x11, 0x22, 0x33, 0x44}},  // remote comm ID
      // message rejected REP (01), reject info length 0, reason 28
      {24 + 8, {0x40, 0x00, 0x00, 0x1C}},
      {24 + 12, {0x02}},        // ARI byte 0: dpdat's pdata length
      {24 + 84, {0xAB, 0xCD}},  // private data
  };
  for (const auto& [off, bytes] : set) std::copy(bytes.begin(), bytes.end(), want.data() + off);
  const Mad got = encode(m);
  for (size_t i = 0; i < kMadSize; ++i) EXPECT_EQ(got[i], want[i]) << "MAD byte " << i;
}

TEST(CmWireGolden, LengthBytesOfTheOtherMessages) {
  // MRA, RTU, DREP: MAD byte 19; DREQ: CM byte 11 (MAD 35).
  for (CmMsg t : {CmMsg::kMra, CmMsg::kRtu, CmMsg::kDrep}) {
    const Mad mad = encode(full(t, 77));
    EXPECT_TRUE(bytes_at(mad, 18, {0x00, 77})) << cm_msg_name(t);
  }
  const Mad with_len = encode(full(CmMsg::kDreq, 77));
  EXPECT_EQ(with_len[24 + 11], 77);
  EXPECT_TRUE(bytes_at(with_len, 18, {0x00, 0x00}));  // the MAD header stays clean
  Mad dreq = encode(full(CmMsg::kDreq, 0));
  EXPECT_TRUE(bytes_at(dreq, 24 + 8, {0xFE, 0xDC, 0xBA, 0x00}));  // remote QPN, length 0
  Mad mra = encode(full(CmMsg::kMra, 0));
  EXPECT_TRUE(bytes_at(mra, 24 + 8, {0x80, 0xE8}));  // MRAed "other" (10), timeout 29 (11101)
}

// ------------------------------------------------------------ private data length

TEST(CmWirePdata, MaxPlusOneIsRefusedAndRejected) {
  for (CmMsg t : kAllCmMsgs) {
    SCOPED_TRACE(std::string(cm_msg_name(t)));
    const size_t max = cm_pdata_max(t);
    CmMessage m = full(t, max);
    Mad mad;
    ASSERT_TRUE(write_cm_mad(m, mad));
    // The write side refuses rather than truncates, and leaves nothing behind.
    m.pdata_len = static_cast<uint8_t>(max + 1);
    Mad refused;
    refused.fill(0xEE);
    EXPECT_FALSE(write_cm_mad(m, refused));
    EXPECT_EQ(refused, Mad{});
    std::vector<uint8_t> frame(kCmFrameSize);
    EXPECT_EQ(build_cm_frame(frame, CmPath{}, m), 0u);
    m.pdata_len = 255;
    EXPECT_FALSE(write_cm_mad(m, refused));
    // The parser rejects a stored length past the area.
    const size_t at = t == CmMsg::kReq    ? 24 + 4
                      : t == CmMsg::kRep  ? 24 + 15
                      : t == CmMsg::kRej  ? 24 + 12
                      : t == CmMsg::kDreq ? 24 + 11
                                          : 19;
    EXPECT_EQ(mad[at], max);
    CmMessage got;
    mad[at] = static_cast<uint8_t>(max + 1);
    EXPECT_EQ(decode(mad, got), CmError::kBadPdataLen);
    mad[at] = 0xFF;
    EXPECT_EQ(decode(mad, got), CmError::kBadPdataLen);
    mad[at] = 0;
    ASSERT_EQ(decode(mad, got), CmError::kOk);
    EXPECT_EQ(got.pdata_len, 0);
    EXPECT_EQ(got.pdata, decltype(got.pdata){});  // nothing past the length is delivered
  }
}

TEST(CmWirePdata, RejWithAriCarriesTheWholeArea) {
  // A REJ from a CM that sends ARI (reject info length != 0) has no dpdat
  // length byte: the whole 148-byte area is delivered.
  CmMessage m = full(CmMsg::kRej, 148);
  Mad mad = encode(m);
  mad[24 + 9] = 4 << 1;  // reject info length 4
  mad[24 + 12] = 0xAA;   // ARI bytes, not a length
  CmMessage got;
  ASSERT_EQ(decode(mad, got), CmError::kOk);
  EXPECT_EQ(got.pdata_len, 148);
  EXPECT_EQ(got.pdata, m.pdata);
  EXPECT_EQ(got.rej_reason, m.rej_reason);
}

TEST(CmWirePdata, NonMappedGidsDecodeAsNoAddress) {
  Mad mad = encode(full(CmMsg::kReq, 0));
  mad[24 + 56] = 0xFE;  // fe80::... : not IPv4-mapped
  mad[24 + 72 + 10] = 0;
  CmMessage got;
  ASSERT_EQ(decode(mad, got), CmError::kOk);
  EXPECT_EQ(got.src_ip, 0u);
  EXPECT_EQ(got.dst_ip, 0u);
}

// ------------------------------------------------------------ errors

TEST(CmWireErrors, EveryReason) {
  const Mad good = encode(full(CmMsg::kRep, 10));
  CmMessage got;
  ASSERT_EQ(decode(good, got), CmError::kOk);

  std::vector<uint8_t> longer(good.begin(), good.end());
  longer.push_back(0);
  EXPECT_EQ(parse_cm(longer, got), CmError::kTooLong);
  EXPECT_EQ(parse_cm(std::span<const uint8_t>(good).first(255), got), CmError::kTooShort);
  EXPECT_EQ(parse_cm({}, got), CmError::kTooShort);

  Mad t = good;
  t[0] = 2;  // base version (OPA)
  EXPECT_EQ(decode(t, got), CmError::kBadVersion);
  t = good;
  t[1] = 0x01;  // subnet management
  EXPECT_EQ(decode(t, got), CmError::kNotCm);
  t = good;
  t[1] = 0x03;  // subnet administration
  EXPECT_EQ(decode(t, got), CmError::kNotCm);
  t = good;
  t[2] = 1;  // CM class version 1
  EXPECT_EQ(decode(t, got), CmError::kBadVersion);
  t = good;
  t[3] = 0x01;  // Get
  EXPECT_EQ(decode(t, got), CmError::kBadMethod);
  t[3] = 0x81;  // GetResp
  EXPECT_EQ(decode(t, got), CmError::kBadMethod);
  for (uint16_t attr :
       std::initializer_list<uint16_t>{0x0000, 0x0001, 0x000F, 0x0017, 0x0019, 0x0110, 0x1010}) {
    t = good;
    t[16] = static_cast<uint8_t>(attr >> 8);
    t[17] = static_cast<uint8_t>(attr);
    EXPECT_EQ(decode(t, got), CmError::kUnknownAttr) << attr;
  }
  t = good;
  t[24 + 15] = 197;
  EXPECT_EQ(decode(t, got), CmError::kBadPdataLen);
}

TEST(CmWireErrors, TruncatedMadsNeverOverRead) {
  for (CmMsg t : kAllCmMsgs) {
    const Mad mad = encode(full(t, cm_pdata_max(t)));
    for (size_t len = 0; len < kMadSize; ++len) {
      // Exactly-sized heap copy: ASan reports any read past it.
      std::unique_ptr<uint8_t[]> buf(new uint8_t[len == 0 ? 1 : len]);
      std::memcpy(buf.get(), mad.data(), len);
      CmMessage got;
      EXPECT_EQ(parse_cm(std::span<const uint8_t>(buf.get(), len), got), CmError::kTooShort);
    }
    std::unique_ptr<uint8_t[]> exact(new uint8_t[kMadSize]);
    std::memcpy(exact.get(), mad.data(), kMadSize);
    CmMessage got;
    EXPECT_EQ(parse_cm(std::span<const uint8_t>(exact.get(), kMadSize), got), CmError::kOk);
  }
}

// ------------------------------------------------------------ frames

CmPath test_path() {
  CmPath p;
  p.src_mac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
  p.dst_mac = {0x02, 0x66, 0x77, 0x88, 0x99, 0xAA};
  p.src_ip = 0x0A000001;
  p.dst_ip = 0x0A000002;
  p.udp_src_port = 0xC123;
  return p;
}

TEST(CmWireFrame, BuildParseRoundTripEveryType) {
  for (CmMsg t : kAllCmMsgs) {
    SCOPED_TRACE(std::string(cm_msg_name(t)));
    const CmMessage m = full(t, 50);
    std::vector<uint8_t> f(kCmFrameSize + 10, 0xEE);
    ASSERT_EQ(build_cm_frame(f, test_path(), m), kCmFrameSize);
    f.resize(kCmFrameSize);

    PacketView v;
    ASSERT_EQ(parse_packet(f, ParseOptions{.pmtu = 256}, v), Reject::kNone);
    EXPECT_EQ(v.opcode, Opcode::kUdSendOnly);
    EXPECT_TRUE(v.info->is(op::kUd));
    EXPECT_EQ(v.bth->opcode, 0x64);
    EXPECT_EQ(v.bth->dest_qp(), 1u);
    EXPECT_EQ(v.bth->pkey.value(), 0xFFFF);
    EXPECT_EQ(v.bth->pad(), 0);
    EXPECT_EQ(v.bth->tver(), 0);
    ASSERT_NE(v.deth, nullptr);
    EXPECT_EQ(v.deth->qkey.value(), 0x80010000u);
    EXPECT_EQ(v.deth->src_qp(), 1u);
    EXPECT_EQ(v.reth, nullptr);
    EXPECT_EQ(v.aeth, nullptr);
    EXPECT_EQ(v.ip->src.value(), 0x0A000001u);
    EXPECT_EQ(v.ip->dst.value(), 0x0A000002u);
    EXPECT_EQ(v.udp->src_port.value(), 0xC123);
    EXPECT_EQ(v.udp->dst_port.value(), kRoceV2Port);
    ASSERT_EQ(v.payload.size(), kMadSize);
    EXPECT_TRUE(std::equal(v.payload.begin(), v.payload.end(), encode(m).begin()));
    // ICRC: stored little-endian, equal to an independent CRC of the frame.
    const uint32_t stored = uint32_t{f[318]} | (uint32_t{f[319]} << 8) | (uint32_t{f[320]} << 16) |
                            (uint32_t{f[321]} << 24);
    EXPECT_EQ(stored, testref::icrc(f.data(), f.size() - 4));
    EXPECT_EQ(v.icrc, stored);

    CmMessage got;
    ASSERT_EQ(parse_cm_packet(v, got), CmError::kOk);
    expect_same(got, carried(m));
  }
}

TEST(CmWireFrame, GoldenTransportHeaders) {
  std::vector<uint8_t> f(kCmFrameSize);
  ASSERT_EQ(build_cm_frame(f, test_path(), full(CmMsg::kRtu, 0)), kCmFrameSize);
  // IPv4 total length 20 + 8 + 12 + 8 + 256 + 4 = 308 (0x0134), UDP length 288 (0x0120).
  EXPECT_EQ(f[16], 0x01);
  EXPECT_EQ(f[17], 0x34);
  EXPECT_EQ(f[38], 0x01);
  EXPECT_EQ(f[39], 0x20);
  // BTH: opcode 0x64, SE 0 M 1 pad 0 TVer 0, P_Key FFFF, resv, DestQP 1, A 0, PSN 0.
  const uint8_t bth[] = {0x64, 0x40, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(0, std::memcmp(f.data() + 42, bth, sizeof bth));
  // DETH: Q_Key 0x80010000, reserved, SrcQP 1.
  const uint8_t deth[] = {0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01};
  EXPECT_EQ(0, std::memcmp(f.data() + 54, deth, sizeof deth));
  // MAD starts right after the DETH.
  const uint8_t mad[] = {0x01, 0x07, 0x02, 0x03};
  EXPECT_EQ(0, std::memcmp(f.data() + 62, mad, sizeof mad));
}

TEST(CmWireFrame, TooSmallBufferAndInvalidMessage) {
  std::vector<uint8_t> f(kCmFrameSize - 1);
  EXPECT_EQ(build_cm_frame(f, test_path(), full(CmMsg::kReq, 0)), 0u);
  f.resize(kCmFrameSize);
  CmMessage bad = full(CmMsg::kReq, 0);
  bad.type = static_cast<CmMsg>(0x0017);
  EXPECT_EQ(build_cm_frame(f, test_path(), bad), 0u);
  Mad mad;
  EXPECT_FALSE(write_cm_mad(bad, mad));
}

TEST(CmWireFrame, NotGsi) {
  std::vector<uint8_t> f(kCmFrameSize);
  ASSERT_EQ(build_cm_frame(f, test_path(), full(CmMsg::kReq, 5)), kCmFrameSize);
  auto reparse = [](std::vector<uint8_t>& t, PacketView& v) {
    const uint32_t c = icrc_compute(t.data(), t.size() - 4);
    for (size_t i = 0; i < 4; ++i) t[t.size() - 4 + i] = static_cast<uint8_t>(c >> (8 * i));
    return parse_packet(t, ParseOptions{.pmtu = 4096}, v);
  };
  CmMessage got;
  PacketView v;
  std::vector<uint8_t> t = f;
  ASSERT_EQ(reparse(t, v), Reject::kNone);
  EXPECT_EQ(parse_cm_packet(v, got), CmError::kOk);
  t = f;
  t[49] = 2;  // BTH dest QP 2
  ASSERT_EQ(reparse(t, v), Reject::kNone);
  EXPECT_EQ(parse_cm_packet(v, got), CmError::kNotGsi);
  t = f;
  t[61] = 0x11;  // DETH source QP 0x11
  ASSERT_EQ(reparse(t, v), Reject::kNone);
  EXPECT_EQ(parse_cm_packet(v, got), CmError::kNotGsi);
  t = f;
  t[57] = 0x01;  // Q_Key 0x80010001
  ASSERT_EQ(reparse(t, v), Reject::kNone);
  EXPECT_EQ(parse_cm_packet(v, got), CmError::kNotGsi);
  t = f;
  t[42] = 0x04;  // RC SEND Only: no DETH; the 8 DETH bytes become payload
  ASSERT_EQ(reparse(t, v), Reject::kNone);
  EXPECT_EQ(parse_cm_packet(v, got), CmError::kNotGsi);
  EXPECT_EQ(parse_cm_packet(PacketView{}, got), CmError::kNotGsi);
  // A UD packet to the GSI whose payload is not a MAD.
  t = f;
  t[62 + 1] = 0x04;  // management class 0x04 (performance)
  ASSERT_EQ(reparse(t, v), Reject::kNone);
  EXPECT_EQ(parse_cm_packet(v, got), CmError::kNotCm);
}

TEST(CmWireFrame, TruncatedFramesNeverOverRead) {
  std::vector<uint8_t> f(kCmFrameSize);
  ASSERT_EQ(build_cm_frame(f, test_path(), full(CmMsg::kReq, 92)), kCmFrameSize);
  for (size_t len = 0; len < f.size(); ++len) {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[len == 0 ? 1 : len]);
    std::memcpy(buf.get(), f.data(), len);
    PacketView v;
    EXPECT_NE(parse_packet(std::span<const uint8_t>(buf.get(), len), ParseOptions{.pmtu = 256}, v),
              Reject::kNone)
        << len;
  }
}

}  // namespace
}  // namespace dpdat::wire
