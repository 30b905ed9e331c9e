#pragma once
// A window of PSNs as a bitmap, one bit a PSN, indexed modulo its span: the
// packets selective repeat placed ahead of a hole (responder), or the READ
// responses placed ahead of a missing one (requester).  The owner keeps the
// window's base; a PSN is only asked about within (base, base + kSpan).

#include <array>
#include <cstddef>
#include <cstdint>

#include "wire/psn.hpp"

namespace dpdat::rc {

template <size_t Words>
class PsnBitmap {
 public:
  static constexpr int32_t kSpan = static_cast<int32_t>(Words * 64);

  bool test(wire::Psn p) const { return (w_[word(p)] >> (p.value() % 64)) & 1u; }
  void set(wire::Psn p, bool on) {
    const uint64_t m = uint64_t{1} << (p.value() % 64);
    uint64_t& w = w_[word(p)];
    w = on ? (w | m) : (w & ~m);
  }
  // Moves every bit of `from` into this bitmap and clears `from`.
  void take_all(PsnBitmap& from) {
    for (size_t i = 0; i < Words; ++i) {
      w_[i] |= from.w_[i];
      from.w_[i] = 0;
    }
  }

 private:
  static size_t word(wire::Psn p) { return (p.value() / 64) % Words; }
  std::array<uint64_t, Words> w_{};
};

}  // namespace dpdat::rc
