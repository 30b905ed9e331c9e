#include "crc32.hpp"

#include <array>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dpdat::wire {
namespace {

constexpr uint32_t kPolyReflected = 0xEDB88320u;

// Slice-by-8 tables: t[0] is the classic byte table; t[k][b] is the CRC of
// byte b followed by k zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? kPolyReflected : 0u);
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b)
    for (size_t k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  return t;
}
constexpr auto kTables = make_tables();

}  // namespace

uint32_t crc32_update_portable(uint32_t crc, const void* data, size_t len) noexcept {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (len >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian host assumed (x86_64, aarch64): checked below
    c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
        kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
  return ~c;
}

static_assert(std::endian::native == std::endian::little, "slice-by-8 path assumes little-endian");

}  // namespace dpdat::wire

// ------------------------------------------------------------------ PCLMUL
// Carry-less multiplication folding (Intel, "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ", 2009), bit-reflected form: fold 4 x 128 bits
// per 64-byte step, then down to 128 bits, to 64, to 32, and a Barrett
// reduction.  Constants are derived below from the polynomial, not pasted.

namespace dpdat::wire {
namespace {

constexpr uint64_t kPoly33 = 0x104C11DB7ull;  // x^32 + ... + 1, normal bit order

// x^n mod P, normal bit order, 32-bit remainder.
constexpr uint32_t xn_mod_p(unsigned n) {
  uint64_t r = 1;
  for (unsigned i = 0; i < n; ++i) {
    r <<= 1;
    if (r & (uint64_t{1} << 32)) r ^= kPoly33;
  }
  return static_cast<uint32_t>(r);
}
constexpr uint64_t reflect(uint64_t v, unsigned bits) {
  uint64_t r = 0;
  for (unsigned i = 0; i < bits; ++i)
    if (v & (uint64_t{1} << i)) r |= uint64_t{1} << (bits - 1 - i);
  return r;
}
// Folding constant for a distance of n bits in the reflected domain.
constexpr uint64_t fold_k(unsigned n) { return reflect(xn_mod_p(n), 32) << 1; }
// floor(x^64 / P) for the Barrett step.
constexpr uint64_t barrett_mu() {
  // Polynomial long division of x^64 by P, one dividend bit at a time.
  uint64_t q = 0, r = 0;
  for (int i = 64; i >= 0; --i) {
    r = (r << 1) | (i == 64 ? 1u : 0u);
    if (r & (uint64_t{1} << 32)) {
      r ^= kPoly33;
      q |= uint64_t{1} << i;
    }
  }
  return q;
}

constexpr uint64_t kR1 = fold_k(4 * 128 + 32), kR2 = fold_k(4 * 128 - 32);
constexpr uint64_t kR3 = fold_k(128 + 32), kR4 = fold_k(128 - 32);
constexpr uint64_t kR5 = fold_k(64);
constexpr uint64_t kMu = reflect(barrett_mu(), 33);
constexpr uint64_t kPolyReflected33 = reflect(kPoly33, 33);
// The same values the literature prints for CRC-32 (IEEE), as a cross-check.
static_assert(kR1 == 0x154442BD4ull && kR2 == 0x1C6E41596ull);
static_assert(kR3 == 0x1751997D0ull && kR4 == 0x0CCAA009Eull);
static_assert(kR5 == 0x163CD6124ull);
static_assert(kMu == 0x1F7011641ull && kPolyReflected33 == 0x1DB710641ull);

#if defined(__x86_64__)
#define DPDAT_PCLMUL __attribute__((target("pclmul,sse4.1")))
DPDAT_PCLMUL inline __m128i load(const uint8_t* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}
// x' = x.lo * k.lo  ^  x.hi * k.hi  ^  next
DPDAT_PCLMUL inline __m128i fold(__m128i x, __m128i k, __m128i next) {
  const __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
  const __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

DPDAT_PCLMUL uint32_t crc32_pclmul_fold(uint32_t c, const uint8_t* p, size_t len) {
  // Precondition: len >= 64 and a multiple of 16; c is the running,
  // already-inverted CRC register.
  const __m128i k12 = _mm_set_epi64x(static_cast<long long>(kR2), static_cast<long long>(kR1));
  const __m128i k34 = _mm_set_epi64x(static_cast<long long>(kR4), static_cast<long long>(kR3));
  __m128i x1 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(c)));
  __m128i x2 = load(p + 16), x3 = load(p + 32), x4 = load(p + 48);
  p += 64;
  len -= 64;
  while (len >= 64) {
    x1 = fold(x1, k12, load(p));
    x2 = fold(x2, k12, load(p + 16));
    x3 = fold(x3, k12, load(p + 32));
    x4 = fold(x4, k12, load(p + 48));
    p += 64;
    len -= 64;
  }
  x1 = fold(x1, k34, x2);
  x1 = fold(x1, k34, x3);
  x1 = fold(x1, k34, x4);
  while (len >= 16) {
    x1 = fold(x1, k34, load(p));
    p += 16;
    len -= 16;
  }
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
  // 128 -> 64 bits.
  __m128i t = _mm_clmulepi64_si128(x1, k34, 0x10);
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), t);
  // 64 -> 32 bits.
  const __m128i k5 = _mm_set_epi64x(0, static_cast<long long>(kR5));
  t = _mm_and_si128(x1, mask32);
  x1 = _mm_srli_si128(x1, 4);
  x1 = _mm_xor_si128(x1, _mm_clmulepi64_si128(t, k5, 0x00));
  // Barrett reduction to the 32-bit remainder.
  const __m128i up =
      _mm_set_epi64x(static_cast<long long>(kMu), static_cast<long long>(kPolyReflected33));
  t = _mm_and_si128(x1, mask32);
  t = _mm_clmulepi64_si128(t, up, 0x10);
  t = _mm_and_si128(t, mask32);
  t = _mm_clmulepi64_si128(t, up, 0x00);
  x1 = _mm_xor_si128(x1, t);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}

uint32_t crc32_update_pclmul(uint32_t crc, const void* data, size_t len) noexcept {
  const auto* p = static_cast<const uint8_t*>(data);
  if (len < 64) return crc32_update_portable(crc, p, len);
  const size_t body = len & ~size_t{15};
  const uint32_t c = ~crc32_pclmul_fold(~crc, p, body);
  return crc32_update_portable(c, p + body, len - body);
}
#endif

using CrcFn = uint32_t (*)(uint32_t, const void*, size_t) noexcept;

CrcFn choose() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1"))
    return &crc32_update_pclmul;
#endif
  return &crc32_update_portable;
}

const CrcFn kChosen = choose();

}  // namespace

uint32_t crc32_update(uint32_t crc, const void* data, size_t len) noexcept {
  return kChosen(crc, data, len);
}

const char* crc32_impl_name() noexcept {
  return kChosen == &crc32_update_portable ? "slice8" : "pclmul";
}

}  // namespace dpdat::wire
