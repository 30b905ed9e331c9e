// Responder, selective repeat: request frames kept whole.  What the
// placement ahead of a hole (responder_sr.cpp) cannot place — a SEND packet
// a message boundary may precede, a FIRST beyond kSrNextMax, a WRITE with
// immediate after its lost FIRST, a READ or atomic request — is copied, frame
// and parsed view, into a block of the engine's pool and run through the
// responder (respond) once resp_.epsn reaches it, as if it arrived then.  IBA
// 9.7.5.1 lets a responder keep what follows a hole; the requester, shown
// the packet as received by the SACK, does not send it again.  What cannot
// be kept (beyond kHeldSpan, or over the engine's held_max_bytes) is left
// to the requester as before.

#include <cstring>
#include <new>

#include "rc/engine/engine.hpp"
#include "rc/qp/qp.hpp"

namespace dpdat::rc {

using wire::Psn;

namespace {

size_t block_bytes(const wire::PacketView& v) { return sizeof(wire::PacketView) + v.frame.size(); }

}  // namespace

const wire::PacketView* Qp::held_at(Psn p) const {
  if (srr_.held_n == 0) return nullptr;
  const auto& [psn, block] = srr_.held->e[p.value() % kHeldSpan];
  if (block == nullptr || !(psn == p)) return nullptr;
  return static_cast<const wire::PacketView*>(block);
}

bool Qp::sr_hold(const wire::PacketView& v, Psn psn) {
  const int32_t d = Psn::diff(psn, resp_.epsn);
  if (d <= 0 || d >= kHeldSpan) return false;
  if (srr_.held == nullptr) srr_.held = std::make_unique<HeldRing>();
  const size_t i = psn.value() % kHeldSpan;
  if (srr_.held->e[i].second != nullptr) {
    if (srr_.held->e[i].first == psn) return true;  // kept already
    held_release(i);                                // left from before resp_.epsn went past
  }
  const size_t bytes = sizeof(wire::PacketView) + v.frame.size();
  void* block = engine_.held_take(bytes);
  if (block == nullptr) return false;
  auto* frame = static_cast<uint8_t*>(block) + sizeof(wire::PacketView);
  std::memcpy(frame, v.frame.data(), v.frame.size());
  new (block)
      wire::PacketView(wire::rebase_view(v, std::span<const uint8_t>(frame, v.frame.size())));
  srr_.held->e[i] = {psn, block};
  srr_.held->bits.set(Psn(static_cast<uint32_t>(i)), true);
  ++srr_.held_n;
  ctr_.sr_kept++;
  return true;
}

void Qp::held_release(size_t i) {
  void* block = srr_.held->e[i].second;
  if (block == nullptr) return;
  engine_.held_give(block, block_bytes(*static_cast<const wire::PacketView*>(block)));
  srr_.held->e[i].second = nullptr;
  srr_.held->bits.set(Psn(static_cast<uint32_t>(i)), false);
  --srr_.held_n;
}

void Qp::held_sweep(bool all) {
  if (srr_.held_n == 0) return;
  const Psn base(0);
  for (int32_t d = srr_.held->bits.next_set(base, 0, kHeldSpan); srr_.held_n > 0 && d < kHeldSpan;
       d = srr_.held->bits.next_set(base, d + 1, kHeldSpan)) {
    const auto i = static_cast<size_t>(d);
    if (all || Psn::diff(srr_.held->e[i].first, resp_.epsn) < 0) held_release(i);
  }
}

void Qp::held_drain(uint64_t now, bool jumped) {
  while (srr_.held_n > 0 && state_ == QpState::kRts) {
    const size_t i = resp_.epsn.value() % kHeldSpan;
    auto& [psn, block] = srr_.held->e[i];
    if (block == nullptr || !(psn == resp_.epsn)) break;
    // Out of the ring first: respond() sees no kept copy of the packet it runs.
    void* const b = block;
    block = nullptr;
    srr_.held->bits.set(Psn(static_cast<uint32_t>(i)), false);
    --srr_.held_n;
    const auto* v = static_cast<const wire::PacketView*>(b);
    const Psn before = resp_.epsn;
    ctr_.sr_kept_taken++;
    respond(*v, now);
    engine_.held_give(b, block_bytes(*v));
    if (resp_.epsn == before) break;  // refused (RNR, error): the requester sends it again
    jumped = jumped || Psn::diff(resp_.epsn, before) > 1;
  }
  // Kept frames resp_.epsn went past without taking them (it moves over a READ's
  // response PSNs, and over packets placed ahead): no longer needed.
  if (jumped || state_ != QpState::kRts) held_sweep(state_ != QpState::kRts);
}

}  // namespace dpdat::rc
