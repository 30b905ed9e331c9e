#pragma once
// Small helpers shared by the queue pair's role files (requester, responder,
// completer, posting): packet counts, opcode choice by segment position, WR
// copies.  Internal to rc/.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "rc/types.hpp"
#include "wire/headers.hpp"

namespace dpdat::rc::detail {

inline uint32_t pkts_for(uint64_t len, uint32_t pmtu) {
  return len == 0 ? 1u : static_cast<uint32_t>((len + pmtu - 1) / pmtu);
}

inline bool is_rd_atomic(WrOp op) {
  return op == WrOp::kRead || op == WrOp::kCompareSwap || op == WrOp::kFetchAdd;
}
inline bool is_atomic(WrOp op) { return op == WrOp::kCompareSwap || op == WrOp::kFetchAdd; }
inline bool is_send_write(WrOp op) {
  return op == WrOp::kSend || op == WrOp::kSendImm || op == WrOp::kWrite || op == WrOp::kWriteImm;
}

// A work request without the SGEs past num_sge (at most kMaxSge: checked at
// posting): a whole-struct copy moved all kMaxSge of them.
template <typename Wr>
void copy_wr(Wr& d, const Wr& s) {
  static_assert(std::is_trivially_copyable_v<Wr> && std::is_standard_layout_v<Wr>);
  constexpr size_t kSgeBegin = offsetof(Wr, sge), kSgeEnd = kSgeBegin + sizeof(s.sge);
  auto* dp = reinterpret_cast<unsigned char*>(&d);
  const auto* sp = reinterpret_cast<const unsigned char*>(&s);
  std::memcpy(dp, sp, kSgeBegin);
  std::memcpy(dp + kSgeEnd, sp + kSgeEnd, sizeof(Wr) - kSgeEnd);
  const uint32_t n = s.num_sge < kMaxSge ? s.num_sge : kMaxSge;
  for (uint32_t i = 0; i < n; ++i) d.sge[i] = s.sge[i];
}

// Position of packet `idx` of `n` in a message.
enum class Pos : uint8_t { kOnly, kFirst, kMiddle, kLast };
inline Pos pos_of(uint32_t idx, uint32_t n) {
  if (n == 1) return Pos::kOnly;
  if (idx == 0) return Pos::kFirst;
  return idx + 1 == n ? Pos::kLast : Pos::kMiddle;
}

// Segment opcodes by message kind, position and immediate data, indexed
// [kind][pos][imm] with Pos order {only, first, middle, last}.
enum class Seg : uint8_t { kSend, kWrite, kReadResp };
using wire::Opcode;
inline constexpr Opcode kSegOpcode[3][4][2] = {{{Opcode::kSendOnly, Opcode::kSendOnlyImm},
                                                {Opcode::kSendFirst, Opcode::kSendFirst},
                                                {Opcode::kSendMiddle, Opcode::kSendMiddle},
                                                {Opcode::kSendLast, Opcode::kSendLastImm}},
                                               {{Opcode::kWriteOnly, Opcode::kWriteOnlyImm},
                                                {Opcode::kWriteFirst, Opcode::kWriteFirst},
                                                {Opcode::kWriteMiddle, Opcode::kWriteMiddle},
                                                {Opcode::kWriteLast, Opcode::kWriteLastImm}},
                                               {{Opcode::kReadRespOnly, Opcode::kReadRespOnly},
                                                {Opcode::kReadRespFirst, Opcode::kReadRespFirst},
                                                {Opcode::kReadRespMiddle, Opcode::kReadRespMiddle},
                                                {Opcode::kReadRespLast, Opcode::kReadRespLast}}};
constexpr Opcode seg_opcode(Seg k, Pos p, bool imm = false) {
  return kSegOpcode[static_cast<size_t>(k)][static_cast<size_t>(p)][imm ? 1 : 0];
}
static_assert(seg_opcode(Seg::kWrite, Pos::kLast, true) == Opcode::kWriteLastImm);
static_assert(seg_opcode(Seg::kSend, Pos::kOnly, true) == Opcode::kSendOnlyImm);

inline constexpr uint8_t kAckSyndrome =
    wire::aeth::make(wire::aeth::kAck, wire::aeth::kCreditsInvalid);

// Entries of the responder's READ / atomic replay cache.
inline uint32_t replay_depth(const QpConfig& cfg) {
  return std::max<uint32_t>({cfg.replay_depth, cfg.max_rd_atomic, 1});
}

}  // namespace dpdat::rc::detail
