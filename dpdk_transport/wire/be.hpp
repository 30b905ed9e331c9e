#pragma once
// Big-endian strong types for wire headers.  Storage is a byte array, so every
// header built from these has alignment 1 and its exact on-wire size without
// `packed`.  There is no implicit conversion to or from host integers: construct
// explicitly and read with .value() (Machnet's BigEndian<T> habit).

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace dpdat::wire {

template <typename T>
class BigEndian {
  static_assert(std::is_unsigned_v<T>);

 public:
  constexpr BigEndian() = default;
  constexpr explicit BigEndian(T host) { set(host); }

  constexpr T value() const {
    T v = 0;
    for (unsigned i = 0; i < sizeof(T); ++i) v = static_cast<T>((v << 8) | bytes_[i]);
    return v;
  }
  constexpr void set(T host) {
    for (unsigned i = 0; i < sizeof(T); ++i)
      bytes_[sizeof(T) - 1 - i] = static_cast<uint8_t>(host >> (8 * i));
  }
  friend constexpr bool operator==(const BigEndian& a, const BigEndian& b) {
    for (unsigned i = 0; i < sizeof(T); ++i)
      if (a.bytes_[i] != b.bytes_[i]) return false;
    return true;
  }

 private:
  uint8_t bytes_[sizeof(T)] = {};
};

using Be16 = BigEndian<uint16_t>;
using Be32 = BigEndian<uint32_t>;
using Be64 = BigEndian<uint64_t>;
static_assert(sizeof(Be16) == 2 && alignof(Be16) == 1);
static_assert(sizeof(Be32) == 4 && alignof(Be32) == 1);
static_assert(sizeof(Be64) == 8 && alignof(Be64) == 1);

// 24-bit big-endian field (PSN, QPN, MSN).  The top 8 bits of a 32-bit word
// that shares the field are reached through the owning header's accessors.
class Be24 {
 public:
  constexpr Be24() = default;
  constexpr explicit Be24(uint32_t host) { set(host); }
  constexpr uint32_t value() const {
    return (uint32_t{b_[0]} << 16) | (uint32_t{b_[1]} << 8) | uint32_t{b_[2]};
  }
  constexpr void set(uint32_t host) {
    b_[0] = static_cast<uint8_t>(host >> 16);
    b_[1] = static_cast<uint8_t>(host >> 8);
    b_[2] = static_cast<uint8_t>(host);
  }

 private:
  uint8_t b_[3] = {};
};
static_assert(sizeof(Be24) == 3 && alignof(Be24) == 1);

}  // namespace dpdat::wire
