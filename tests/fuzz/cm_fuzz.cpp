// libFuzzer target for the CM MAD codec (wire/cm.hpp): parse_cm(),
// write_cm_mad(), build_cm_frame() and parse_cm_packet().
//
// The input is used twice:
//  - as a MAD (any length; exactly 256 bytes is the interesting case, so the
//    first 256 bytes are also fed as one): whatever parse_cm() accepts must
//    re-encode, and the re-encoding must decode to the same message and be a
//    fixed point of decode+encode;
//  - as the fields of a CmMessage (encode direction): whatever
//    write_cm_mad() accepts must decode to a message that re-encodes to the
//    same bytes, and build_cm_frame() must give a frame that the strict packet
//    parser accepts and parse_cm_packet() decodes to that message.
// Any violation aborts; ASan/UBSan catch out-of-bounds reads and UB.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wire/cm.hpp"
#include "wire/packet.hpp"

using namespace dpdat::wire;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// A decoded message must be in range for its fields.
void check_decoded(const CmMessage& m) {
  check(cm_pdata_max(m.type) != 0);
  check(cm_msg_name(m.type) != "unknown");
  check(m.pdata_len <= cm_pdata_max(m.type));
  check(m.qpn < (1u << 24) && m.start_psn < (1u << 24));
  check(m.path_mtu < 16 && m.retry_count < 8 && m.rnr_retry < 8);
  check(m.local_cm_resp_timeout < 32 && m.remote_cm_resp_timeout < 32);
  check(m.max_cm_retries < 16 && m.ack_timeout < 32 && m.service_timeout < 32);
  check(m.rej_msg < 4);
  // Bytes past the private-data length are left zero.
  for (size_t i = m.pdata_len; i < m.pdata.size(); ++i) check(m.pdata[i] == 0);
}

// parse(mad) == m: m re-encodes to a MAD that decodes to m and is canonical.
void round_trip(const CmMessage& m) {
  check_decoded(m);
  std::array<uint8_t, kMadSize> mad2;
  check(write_cm_mad(m, mad2));
  CmMessage m2;
  check(parse_cm(mad2, m2) == CmError::kOk);
  check(m2 == m);
  std::array<uint8_t, kMadSize> mad3;
  check(write_cm_mad(m2, mad3));
  check(mad3 == mad2);

  // The same message as a frame, through the strict parser.
  CmPath path;
  path.src_mac = {2, 0, 0, 0, 0, 1};
  path.dst_mac = {2, 0, 0, 0, 0, 2};
  path.src_ip = 0x0A000001;
  path.dst_ip = 0x0A000002;
  std::vector<uint8_t> frame(kCmFrameSize);
  check(build_cm_frame(std::span<uint8_t>(frame.data(), kCmFrameSize - 1), path, m) == 0);
  check(build_cm_frame(frame, path, m) == kCmFrameSize);
  PacketView v;
  check(parse_packet(frame, ParseOptions{}, v) == Reject::kNone);
  CmMessage m3;
  check(parse_cm_packet(v, m3) == CmError::kOk);
  check(m3 == m);
}

void decode(const uint8_t* data, size_t size) {
  // Exact-size copy so ASan sees any read past the span.
  const std::vector<uint8_t> mad(data, data + size);
  CmMessage m;
  const CmError e = parse_cm(mad, m);
  check(static_cast<size_t>(e) < static_cast<size_t>(CmError::kCount));
  check(cm_error_name(e) != "invalid");
  if (size < kMadSize) check(e == CmError::kTooShort);
  if (size > kMadSize) check(e == CmError::kTooLong);
  if (e == CmError::kOk) round_trip(m);
}

// Reads fields of a CmMessage from the input, in order; zeros past its end.
class Reader {
 public:
  Reader(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  template <typename T>
  T get() {
    T v{};
    uint8_t b[sizeof(T)] = {};
    for (size_t i = 0; i < sizeof(T) && pos_ < n_; ++i) b[i] = d_[pos_++];
    std::memcpy(&v, b, sizeof(T));
    return v;
  }
  size_t pos() const { return pos_; }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t pos_ = 0;
};

void encode(const uint8_t* data, size_t size) {
  Reader r(data, size);
  CmMessage m;
  // The type: mostly a CM message, sometimes any 16-bit value.
  const auto t = r.get<uint16_t>();
  m.type = (t & 0x8000u) != 0 ? static_cast<CmMsg>(t & 0x7FFFu) : kAllCmMsgs[t % kAllCmMsgs.size()];
  m.tid = r.get<uint64_t>();
  m.local_comm_id = r.get<uint32_t>();
  m.remote_comm_id = r.get<uint32_t>();
  m.service_id = r.get<uint64_t>();
  m.ca_guid = r.get<uint64_t>();
  m.qpn = r.get<uint32_t>();
  m.start_psn = r.get<uint32_t>();
  m.responder_resources = r.get<uint8_t>();
  m.initiator_depth = r.get<uint8_t>();
  m.path_mtu = r.get<uint8_t>();
  m.retry_count = r.get<uint8_t>();
  m.rnr_retry = r.get<uint8_t>();
  m.local_cm_resp_timeout = r.get<uint8_t>();
  m.remote_cm_resp_timeout = r.get<uint8_t>();
  m.max_cm_retries = r.get<uint8_t>();
  m.ack_timeout = r.get<uint8_t>();
  m.src_ip = r.get<uint32_t>();
  m.dst_ip = r.get<uint32_t>();
  m.rej_reason = static_cast<CmRejReason>(r.get<uint16_t>());
  m.rej_msg = r.get<uint8_t>();
  m.service_timeout = r.get<uint8_t>();
  m.pdata_len = r.get<uint8_t>();
  for (size_t i = 0; i < m.pdata.size() && r.pos() < size; ++i) m.pdata[i] = r.get<uint8_t>();

  std::array<uint8_t, kMadSize> mad;
  const bool ok = write_cm_mad(m, mad);
  const bool valid = cm_pdata_max(m.type) != 0 && m.pdata_len <= cm_pdata_max(m.type);
  check(ok == valid);
  if (!ok) {
    // Refused: nothing half-written, and no frame.
    for (const uint8_t b : mad) check(b == 0);
    std::vector<uint8_t> frame(kCmFrameSize);
    check(build_cm_frame(frame, CmPath{}, m) == 0);
    return;
  }
  CmMessage d;
  check(parse_cm(mad, d) == CmError::kOk);
  // What the encoder keeps of m: the type, the header and the private data
  // up to its length (fields a type does not carry are not compared).
  check(d.type == m.type && d.tid == m.tid && d.local_comm_id == m.local_comm_id);
  check(d.pdata_len == m.pdata_len);
  check(std::memcmp(d.pdata.data(), m.pdata.data(), m.pdata_len) == 0);
  if (m.type != CmMsg::kReq) check(d.remote_comm_id == m.remote_comm_id);
  if (m.type == CmMsg::kReq || m.type == CmMsg::kRep) {
    check(d.qpn == (m.qpn & 0xFFFFFFu) && d.start_psn == (m.start_psn & 0xFFFFFFu));
    check(d.ca_guid == m.ca_guid && d.responder_resources == m.responder_resources);
    check(d.initiator_depth == m.initiator_depth && d.path_mtu == (m.path_mtu & 0xFu));
  }
  if (m.type == CmMsg::kReq) {
    check(d.service_id == m.service_id && d.retry_count == (m.retry_count & 7u));
    check(d.ack_timeout == (m.ack_timeout & 31u));
  }
  if (m.type == CmMsg::kRej) check(d.rej_reason == m.rej_reason);
  round_trip(d);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  decode(data, size);
  if (size > kMadSize) decode(data, kMadSize);
  encode(data, size);
  return 0;
}
