#pragma once
// 24-bit packet sequence numbers with serial-number comparison across the wrap
// (IBA 9.7.2: a PSN is "ahead" of another when it lies within the next 2^23
// values modulo 2^24).

#include <cstdint>

namespace dpdat::wire {

class Psn {
 public:
  static constexpr uint32_t kMask = 0x00FF'FFFF;
  static constexpr uint32_t kHalf = 0x0080'0000;

  constexpr Psn() = default;
  constexpr explicit Psn(uint32_t v) : v_(v & kMask) {}
  constexpr uint32_t value() const { return v_; }

  // Signed distance a - b in (-2^23, 2^23].  Positive when a is after b.
  static constexpr int32_t diff(Psn a, Psn b) {
    const uint32_t d = (a.v_ - b.v_) & kMask;
    return d >= kHalf ? static_cast<int32_t>(d) - static_cast<int32_t>(kMask + 1)
                      : static_cast<int32_t>(d);
  }
  constexpr Psn operator+(int32_t n) const {
    return Psn(static_cast<uint32_t>(static_cast<int64_t>(v_) + n) & kMask);
  }
  constexpr Psn operator-(int32_t n) const { return *this + (-n); }
  constexpr Psn& operator++() {
    v_ = (v_ + 1) & kMask;
    return *this;
  }
  constexpr Psn& operator+=(int32_t n) { return *this = *this + n; }

  friend constexpr bool operator==(Psn a, Psn b) { return a.v_ == b.v_; }
  friend constexpr bool operator<(Psn a, Psn b) { return diff(a, b) < 0; }
  friend constexpr bool operator>(Psn a, Psn b) { return diff(a, b) > 0; }
  friend constexpr bool operator<=(Psn a, Psn b) { return diff(a, b) <= 0; }
  friend constexpr bool operator>=(Psn a, Psn b) { return diff(a, b) >= 0; }

 private:
  uint32_t v_ = 0;
};

static_assert(Psn(0xFFFFFF) + 1 == Psn(0));
static_assert(Psn(0) > Psn(0xFFFFFF));
static_assert(Psn::diff(Psn(2), Psn(0xFFFFFE)) == 4);
static_assert(Psn::diff(Psn(0xFFFFFE), Psn(2)) == -4);

}  // namespace dpdat::wire
