#pragma once
// A window of PSNs as a bitmap, one bit a PSN, indexed modulo its span: the
// packets selective repeat placed ahead of a hole (responder), or the READ
// responses placed ahead of a missing one (requester).  The owner keeps the
// window's base; a PSN is only asked about within (base, base + kSpan).

#include <algorithm>
#include <array>
#include <bit>
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
  // The bits of PSNs p .. p + 63 (bit j: p + j).
  uint64_t chunk(wire::Psn p) const {
    const uint32_t b = p.value() % static_cast<uint32_t>(kSpan);
    const size_t w = b / 64, s = b % 64;
    const uint64_t lo = w_[w] >> s;
    return s == 0 ? lo : lo | (w_[(w + 1) % Words] << (64 - s));
  }
  // Sets the bits of PSNs p .. p + 63 that are set in `bits` (bit j: p + j).
  void set_chunk(wire::Psn p, uint64_t bits) {
    const uint32_t b = p.value() % static_cast<uint32_t>(kSpan);
    const size_t w = b / 64, s = b % 64;
    w_[w] |= bits << s;
    if (s != 0) w_[(w + 1) % Words] |= bits >> (64 - s);
  }
  // Clears the bits of PSNs p .. p + 63 that are set in `bits`.
  void clear_chunk(wire::Psn p, uint64_t bits) {
    const uint32_t b = p.value() % static_cast<uint32_t>(kSpan);
    const size_t w = b / 64, s = b % 64;
    w_[w] &= ~(bits << s);
    if (s != 0) w_[(w + 1) % Words] &= ~(bits >> (64 - s));
  }
  // Mask of the first n (1..64) bits of a chunk.
  static uint64_t first_bits(int32_t n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }
  // The smallest d in [d, end) with base + d set, else end (end - d <= kSpan):
  // a word at a time, not a bit.
  int32_t next_set(wire::Psn base, int32_t d, int32_t end) const {
    for (; d < end; d += 64) {
      const uint64_t c = chunk(base + d) & first_bits(end - d);
      if (c != 0) return d + std::countr_zero(c);
    }
    return end;
  }
  bool none() const {
    return std::all_of(w_.begin(), w_.end(), [](uint64_t w) { return w == 0; });
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
