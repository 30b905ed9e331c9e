#include "cm.hpp"

#include <cstring>

namespace dpdat::wire {

namespace {

// Where each message keeps its private data and the dpdat length byte (see
// cm.hpp).  Offsets are from the start of the MAD.
struct Layout {
  std::string_view name;
  size_t pdata_off;
  size_t pdata_max;
  size_t len_at;
};

constexpr size_t kH = kMadHdrSize;  // CM message byte n is MAD byte kH + n

// MAD common header.
constexpr size_t kBaseVersion = 0, kMgmtClass = 1, kClassVersion = 2, kMethod = 3, kTid = 8,
                 kAttrId = 16, kMadReservedLo = 19;

// Indexed by attribute ID - 0x10.
constexpr std::array<Layout, 7> kLayouts = {{
    {"REQ", kH + 140, kCmReqPdata, kH + 4},
    {"MRA", kH + 10, kCmMraPdata, kMadReservedLo},
    {"REJ", kH + 84, kCmRejPdata, kH + 12},
    {"REP", kH + 36, kCmRepPdata, kH + 15},
    {"RTU", kH + 8, kCmRtuPdata, kMadReservedLo},
    {"DREQ", kH + 12, kCmDreqPdata, kH + 11},
    {"DREP", kH + 8, kCmDrepPdata, kMadReservedLo},
}};
static_assert(kLayouts[0].pdata_off + kCmReqPdata == kMadSize);
static_assert(kLayouts[1].pdata_off + kCmMraPdata == kMadSize);
static_assert(kLayouts[2].pdata_off + kCmRejPdata == kMadSize);
static_assert(kLayouts[3].pdata_off + kCmRepPdata == kMadSize);
static_assert(kLayouts[4].pdata_off + kCmRtuPdata == kMadSize);
static_assert(kLayouts[5].pdata_off + kCmDreqPdata == kMadSize);
static_assert(kLayouts[6].pdata_off + kCmDrepPdata == kMadSize);

const Layout* layout_of(uint16_t attr) {
  const uint16_t i = static_cast<uint16_t>(attr - static_cast<uint16_t>(CmMsg::kReq));
  return i < kLayouts.size() ? &kLayouts[i] : nullptr;
}
const Layout* layout_of(CmMsg m) { return layout_of(static_cast<uint16_t>(m)); }

// Big-endian fields at byte offsets.  Callers stay inside the 256-byte MAD.
void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put24(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 16);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
  put16(p, static_cast<uint16_t>(v >> 16));
  put16(p + 2, static_cast<uint16_t>(v));
}
void put64(uint8_t* p, uint64_t v) {
  put32(p, static_cast<uint32_t>(v >> 32));
  put32(p + 4, static_cast<uint32_t>(v));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
uint32_t get24(const uint8_t* p) {
  return (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | uint32_t{p[2]};
}
uint32_t get32(const uint8_t* p) { return (uint32_t{get16(p)} << 16) | get16(p + 2); }
uint64_t get64(const uint8_t* p) { return (uint64_t{get32(p)} << 32) | get32(p + 4); }

// The low `width` bits of `v`, placed at bit `shift` of a byte; and back.
uint8_t bits(uint8_t v, unsigned width, unsigned shift) {
  return static_cast<uint8_t>((unsigned{v} & ((1u << width) - 1)) << shift);
}
uint8_t field(uint8_t byte, unsigned width, unsigned shift) {
  return static_cast<uint8_t>((unsigned{byte} >> shift) & ((1u << width) - 1));
}

// RoCEv2 GIDs for IPv4 are IPv4-mapped IPv6 addresses, ::ffff:a.b.c.d.
void put_gid_v4(uint8_t* p, uint32_t ip) {
  std::memset(p, 0, 10);
  p[10] = 0xFF;
  p[11] = 0xFF;
  put32(p + 12, ip);
}
uint32_t get_gid_v4(const uint8_t* p) {
  for (size_t i = 0; i < 10; ++i)
    if (p[i] != 0) return 0;
  return p[10] == 0xFF && p[11] == 0xFF ? get32(p + 12) : 0;
}

// REQ constants dpdat always sends (RoCEv2: no LIDs, no alternate path).
constexpr uint16_t kReqPkey = 0xFFFF;
constexpr uint8_t kReqHopLimit = 64;

}  // namespace

size_t cm_pdata_max(CmMsg m) noexcept {
  const Layout* l = layout_of(m);
  return l != nullptr ? l->pdata_max : 0;
}

std::string_view cm_msg_name(CmMsg m) noexcept {
  const Layout* l = layout_of(m);
  return l != nullptr ? l->name : "unknown";
}

std::string_view cm_error_name(CmError e) noexcept {
  static constexpr std::array<std::string_view, static_cast<size_t>(CmError::kCount)> kNames = {
      "ok",         "too-short",    "too-long",      "not-cm", "bad-version",
      "bad-method", "unknown-attr", "bad-pdata-len", "not-gsi"};
  const auto i = static_cast<size_t>(e);
  return i < kNames.size() ? kNames[i] : "invalid";
}

bool write_cm_mad(const CmMessage& m, std::span<uint8_t, kMadSize> out) noexcept {
  uint8_t* p = out.data();
  std::memset(p, 0, kMadSize);
  const Layout* l = layout_of(m.type);
  if (l == nullptr || m.pdata_len > l->pdata_max) return false;

  p[kBaseVersion] = kMadBaseVersion;
  p[kMgmtClass] = kMgmtClassCm;
  p[kClassVersion] = kCmClassVersion;
  p[kMethod] = kMadMethodSend;
  put64(p + kTid, m.tid);
  put16(p + kAttrId, static_cast<uint16_t>(m.type));

  uint8_t* c = p + kH;
  put32(c + 0, m.local_comm_id);
  switch (m.type) {
    case CmMsg::kReq:
      put16(c + 6, m.src_port);
      put64(c + 8, m.service_id);
      put64(c + 16, m.ca_guid);
      put24(c + 32, m.qpn);
      c[35] = m.responder_resources;
      c[39] = m.initiator_depth;
      // Transport service type RC (0), end-to-end flow control 0.
      c[43] = bits(m.remote_cm_resp_timeout, 5, 3);
      put24(c + 44, m.start_psn);
      c[47] = static_cast<uint8_t>(bits(m.local_cm_resp_timeout, 5, 3) | bits(m.retry_count, 3, 0));
      put16(c + 48, kReqPkey);
      c[50] = static_cast<uint8_t>(bits(m.path_mtu, 4, 4) | bits(m.rnr_retry, 3, 0));
      c[51] = bits(m.max_cm_retries, 4, 4);
      put_gid_v4(c + 56, m.src_ip);
      put_gid_v4(c + 72, m.dst_ip);
      c[93] = kReqHopLimit;
      c[95] = bits(m.ack_timeout, 5, 3);
      break;
    case CmMsg::kMra:
      put32(c + 4, m.remote_comm_id);
      c[8] = bits(m.rej_msg, 2, 6);
      c[9] = bits(m.service_timeout, 5, 3);
      break;
    case CmMsg::kRej:
      put32(c + 4, m.remote_comm_id);
      c[8] = bits(m.rej_msg, 2, 6);
      // c[9]: reject info length 0, so the ARI (holding our length byte) is ignored.
      put16(c + 10, static_cast<uint16_t>(m.rej_reason));
      break;
    case CmMsg::kRep:
      put32(c + 4, m.remote_comm_id);
      put24(c + 12, m.qpn);
      put24(c + 20, m.start_psn);
      c[24] = m.responder_resources;
      c[25] = m.initiator_depth;
      c[27] = static_cast<uint8_t>(bits(m.rnr_retry, 3, 5) | bits(m.path_mtu, 4, 0));
      put64(c + 28, m.ca_guid);
      break;
    case CmMsg::kDreq:
      put32(c + 4, m.remote_comm_id);
      put24(c + 8, m.qpn);
      break;
    case CmMsg::kRtu:
    case CmMsg::kDrep:
      put32(c + 4, m.remote_comm_id);
      break;
  }
  if (m.pdata_len != 0) std::memcpy(p + l->pdata_off, m.pdata.data(), m.pdata_len);
  p[l->len_at] = m.pdata_len;
  return true;
}

CmError parse_cm(std::span<const uint8_t> mad, CmMessage& out) noexcept {
  if (mad.size() < kMadSize) return CmError::kTooShort;
  if (mad.size() > kMadSize) return CmError::kTooLong;
  const uint8_t* p = mad.data();
  if (p[kBaseVersion] != kMadBaseVersion) return CmError::kBadVersion;
  if (p[kMgmtClass] != kMgmtClassCm) return CmError::kNotCm;
  if (p[kClassVersion] != kCmClassVersion) return CmError::kBadVersion;
  if (p[kMethod] != kMadMethodSend) return CmError::kBadMethod;
  const uint16_t attr = get16(p + kAttrId);
  const Layout* l = layout_of(attr);
  if (l == nullptr) return CmError::kUnknownAttr;
  const uint8_t* c = p + kH;

  size_t len = p[l->len_at];
  // A REJ with ARI (not from dpdat): no length byte, the whole area counts.
  if (attr == static_cast<uint16_t>(CmMsg::kRej) && field(c[9], 7, 1) != 0) len = l->pdata_max;
  if (len > l->pdata_max) return CmError::kBadPdataLen;

  out = CmMessage{};
  out.type = static_cast<CmMsg>(attr);
  out.tid = get64(p + kTid);
  out.local_comm_id = get32(c + 0);
  switch (out.type) {
    case CmMsg::kReq:
      out.src_port = get16(c + 6);
      out.service_id = get64(c + 8);
      out.ca_guid = get64(c + 16);
      out.qpn = get24(c + 32);
      out.responder_resources = c[35];
      out.initiator_depth = c[39];
      out.remote_cm_resp_timeout = field(c[43], 5, 3);
      out.start_psn = get24(c + 44);
      out.local_cm_resp_timeout = field(c[47], 5, 3);
      out.retry_count = field(c[47], 3, 0);
      out.path_mtu = field(c[50], 4, 4);
      out.rnr_retry = field(c[50], 3, 0);
      out.max_cm_retries = field(c[51], 4, 4);
      out.src_ip = get_gid_v4(c + 56);
      out.dst_ip = get_gid_v4(c + 72);
      out.ack_timeout = field(c[95], 5, 3);
      break;
    case CmMsg::kMra:
      out.remote_comm_id = get32(c + 4);
      out.rej_msg = field(c[8], 2, 6);
      out.service_timeout = field(c[9], 5, 3);
      break;
    case CmMsg::kRej:
      out.remote_comm_id = get32(c + 4);
      out.rej_msg = field(c[8], 2, 6);
      out.rej_reason = static_cast<CmRejReason>(get16(c + 10));
      break;
    case CmMsg::kRep:
      out.remote_comm_id = get32(c + 4);
      out.qpn = get24(c + 12);
      out.start_psn = get24(c + 20);
      out.responder_resources = c[24];
      out.initiator_depth = c[25];
      out.rnr_retry = field(c[27], 3, 5);
      out.path_mtu = field(c[27], 4, 0);
      out.ca_guid = get64(c + 28);
      break;
    case CmMsg::kDreq:
      out.remote_comm_id = get32(c + 4);
      out.qpn = get24(c + 8);
      break;
    case CmMsg::kRtu:
    case CmMsg::kDrep:
      out.remote_comm_id = get32(c + 4);
      break;
  }
  out.pdata_len = static_cast<uint8_t>(len);
  if (len != 0) std::memcpy(out.pdata.data(), p + l->pdata_off, len);
  return CmError::kOk;
}

CmError parse_cm_packet(const PacketView& v, CmMessage& out) noexcept {
  if (v.bth == nullptr || v.opcode != Opcode::kUdSendOnly || v.deth == nullptr ||
      v.bth->dest_qp() != kGsiQpn || v.deth->src_qp() != kGsiQpn ||
      v.deth->qkey.value() != kGsiQkey)
    return CmError::kNotGsi;
  return parse_cm(v.payload, out);
}

size_t build_cm_frame(std::span<uint8_t> out, const CmPath& path, const CmMessage& m) noexcept {
  if (out.size() < kCmFrameSize) return 0;
  std::array<uint8_t, kMadSize> mad;
  if (!write_cm_mad(m, mad)) return 0;
  BuildSpec s;
  s.src_mac = path.src_mac;
  s.dst_mac = path.dst_mac;
  s.src_ip = path.src_ip;
  s.dst_ip = path.dst_ip;
  s.src_port = path.udp_src_port;
  s.opcode = Opcode::kUdSendOnly;
  s.dest_qp = kGsiQpn;
  s.psn = Psn(0);  // UD: receivers do not check the PSN
  s.pkey = Bth::kDefaultPkey;
  s.qkey = kGsiQkey;
  s.src_qp = kGsiQpn;
  s.payload = mad;
  const BuildResult r = build_packet(out, s, static_cast<uint32_t>(kMadSize));
  return r.ok() ? r.len : 0;
}

}  // namespace dpdat::wire
