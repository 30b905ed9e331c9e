#pragma once
// One representative frame specification per RC opcode, shared by the
// wiredump tool and the tshark interop test so both judge the same packets.

#include <cstdint>
#include <vector>

#include "wire/packet.hpp"

namespace dpdat::wire {

inline constexpr uint32_t kSamplePmtu = 1024;

// spec.payload points into `payload`: keep the vector these came in alive
// (a copied SampleFrame still points at the original's bytes).
struct SampleFrame {
  BuildSpec spec;
  std::vector<uint8_t> payload;
};

// Payload size for an opcode: a full PMTU where the opcode requires it, a
// small odd size (to exercise pad) for LAST/ONLY, none where none is allowed.
inline size_t sample_payload_len(Opcode o, size_t small) {
  const auto& info = op_info(o);
  if (!info.is(op::kPayload)) return 0;
  const bool full = info.is(op::kMiddle) || (info.is(op::kFirst) && !info.is(op::kLast));
  return full ? kSamplePmtu : small;
}

inline std::vector<SampleFrame> sample_frames(size_t small_payload = 13) {
  std::vector<SampleFrame> out;
  uint32_t i = 0;
  for (Opcode o : kAllRcOpcodes) {
    SampleFrame f;
    auto& s = f.spec;
    s.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
    s.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
    s.src_ip = 0xC0A86401;  // 192.168.100.1 (documentation only: never sent)
    s.dst_ip = 0xC0A86402;
    s.src_port = static_cast<uint16_t>(0xC000 + i);
    s.opcode = o;
    s.dest_qp = 0x000100 + i;
    s.psn = Psn(0xFFFFF0 + i);  // crosses the 24-bit wrap
    s.ack_req = (i % 2) == 0;
    s.va = 0x00007F0000001000ull + i * 0x100ull;
    s.rkey = 0x1200 + i;
    s.dma_len = 4096;
    s.swap_add = 0x1111111111111111ull * (i % 15 + 1);
    s.compare = 0x0102030405060708ull;
    s.syndrome = 0x1F;  // ACK, no credit information
    s.msn = 0x000020 + i;
    s.atomic_orig = 0x0A0B0C0D0E0F1011ull;
    s.imm = 0xDEAD0000 + i;
    s.inv_rkey = 0x3400 + i;
    f.payload.resize(sample_payload_len(o, small_payload));
    for (size_t b = 0; b < f.payload.size(); ++b) f.payload[b] = static_cast<uint8_t>(b * 7 + i);
    out.push_back(std::move(f));
    ++i;
  }
  for (auto& f : out) f.spec.payload = f.payload;
  return out;
}

}  // namespace dpdat::wire

// The spelling tests/fuzz/seed_writer.cpp still uses.
namespace dpdat::tools {
using wire::kSamplePmtu;
using wire::sample_frames;
using wire::SampleFrame;
}  // namespace dpdat::tools
