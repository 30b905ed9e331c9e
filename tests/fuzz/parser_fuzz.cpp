// libFuzzer target for the strict RoCEv2 parser and the CM MAD parser.  Any
// input: the parsers must not crash, read out of bounds (ASan) or hit UB
// (UBSan), and whatever they accept must be self-consistent (a CM message
// re-encodes to one that decodes the same).
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

bool inside(const void* p, size_t n, const uint8_t* base, size_t len) {
  const auto* b = static_cast<const uint8_t*>(p);
  return b >= base && b + n <= base + len;
}

void parse_and_check(const uint8_t* data, size_t size, const ParseOptions& opts) {
  // Exact-size copy so ASan sees any read past the span.
  std::vector<uint8_t> buf(data, data + size);
  PacketView v;
  const Reject r = parse_packet(std::span<const uint8_t>(buf.data(), buf.size()), opts, v);
  check(static_cast<size_t>(r) < static_cast<size_t>(Reject::kCount));
  if (r != Reject::kNone) return;
  const uint8_t* base = buf.data();
  const size_t len = v.frame.size();
  check(len <= size && v.frame.data() == base);
  check(v.info != nullptr && v.info->valid);
  check(inside(v.bth, sizeof(Bth), base, len));
  check(v.payload.size() <= opts.pmtu);
  check(inside(v.payload.data(), v.payload.size() + v.pad + kIcrcSize, base, len));
  check(v.payload.data() + v.payload.size() + v.pad + kIcrcSize == base + len);
  check(((v.payload.size() + v.pad) & 3u) == 0);
  if (v.deth) check(inside(v.deth, sizeof(Deth), base, len));
  if (v.reth) check(inside(v.reth, sizeof(Reth), base, len));
  if (v.atomic) check(inside(v.atomic, sizeof(AtomicEth), base, len));
  if (v.aeth) check(inside(v.aeth, sizeof(Aeth), base, len));
  if (v.atomic_ack) check(inside(v.atomic_ack, sizeof(AtomicAckEth), base, len));
  if (v.imm) check(inside(v.imm, sizeof(ImmDt), base, len));
  if (v.ieth) check(inside(v.ieth, sizeof(Ieth), base, len));
  check(v.deth != nullptr == v.info->has(Ext::kDeth));
  check(v.reth != nullptr == v.info->has(Ext::kReth));
  check(v.aeth != nullptr == v.info->has(Ext::kAeth));
  if (opts.check_icrc) check(icrc_compute(base, len - kIcrcSize) == v.icrc);
  if (opts.check_ip_checksum) check(ipv4_checksum(*v.ip) == 0);
  check(v.frame.size() == frame_size(v.opcode, v.payload.size()));
  if (v.deth) {
    // Exact-size copy of the payload, so ASan sees any read past the MAD.
    const std::vector<uint8_t> mad(v.payload.begin(), v.payload.end());
    CmMessage m;
    const CmError e = parse_cm(mad, m);
    check(static_cast<size_t>(e) < static_cast<size_t>(CmError::kCount));
    if (e == CmError::kOk) {
      check(m.pdata_len <= cm_pdata_max(m.type));
      std::array<uint8_t, kMadSize> again;
      check(write_cm_mad(m, again));
      CmMessage m2;
      check(parse_cm(again, m2) == CmError::kOk && m2 == m);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parse_and_check(data, size, ParseOptions{});
  parse_and_check(data, size, ParseOptions{.pmtu = 1024, .full_segments = false});
  parse_and_check(data, size,
                  ParseOptions{.pmtu = 256, .check_ip_checksum = false, .check_icrc = false});
  // Most random inputs die at the ICRC; also feed the input with a repaired
  // IPv4 checksum and ICRC so the deeper checks see mutations.
  if (size >= kL2L3L4Size + sizeof(Bth) + kIcrcSize) {
    std::vector<uint8_t> fixed(data, data + size);
    auto* ip = reinterpret_cast<Ipv4Hdr*>(fixed.data() + sizeof(EthHdr));
    ip->checksum = Be16(0);
    ip->checksum = Be16(ipv4_checksum(*ip));
    const size_t tot = sizeof(EthHdr) + ip->total_length.value();
    if (tot <= size && tot >= kL2L3L4Size + sizeof(Bth) + kIcrcSize) {
      const uint32_t c = icrc_compute(fixed.data(), tot - kIcrcSize);
      for (size_t i = 0; i < 4; ++i) fixed[tot - 4 + i] = static_cast<uint8_t>(c >> (8 * i));
    }
    parse_and_check(fixed.data(), fixed.size(), ParseOptions{});
  }
  return 0;
}
