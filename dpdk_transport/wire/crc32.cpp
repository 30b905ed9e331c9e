#include "crc32.hpp"

#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

#include "settings/settings.hpp"
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

// ------------------------------------------------------------ folding
// Carry-less multiplication folding (Intel, "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ", 2009), bit-reflected form.  A 128-bit lane x
// that lies N bits before the data it is folded onto becomes
//   x.lo * (x^(N+32) mod P)'  ^  x.hi * (x^(N-32) mod P)'
// (' = bit-reflected, shifted left once), XORed into that data.  The paths
// differ only in how many lanes they fold at once: 4 x 128 bits per 64-byte
// step (PCLMULQDQ), 4 x 256 bits per 128 B and 4 x 512 bits per 256 B
// (VPCLMULQDQ); each then folds its lanes down to one 128-bit lane, folds the
// remaining 16-byte blocks into it, reduces 128 -> 64 -> 32 bits and finishes
// with a Barrett reduction.  Constants are derived below from the polynomial,
// not pasted, and cross-checked against an independent derivation and the
// values the literature prints.

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
// The same constant computed directly in the reflected domain (multiplying by
// x is a right shift there, reducing XORs the reflected polynomial), as an
// independent check of fold_k().
constexpr uint64_t fold_k_reflected(unsigned n) {
  uint32_t r = 0x80000000u;  // x^0
  for (unsigned i = 0; i < n; ++i) r = (r >> 1) ^ ((r & 1u) ? kPolyReflected : 0u);
  return uint64_t{r} << 1;
}
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

// A (lo, hi) constant pair for folding a lane across `bits` bits.
struct FoldPair {
  uint64_t lo, hi;
};
constexpr FoldPair fold_pair(unsigned bits) { return {fold_k(bits + 32), fold_k(bits - 32)}; }
constexpr bool pair_checks(unsigned bits) {
  return fold_pair(bits).lo == fold_k_reflected(bits + 32) &&
         fold_pair(bits).hi == fold_k_reflected(bits - 32);
}

constexpr FoldPair kFold128 = fold_pair(128), kFold256 = fold_pair(256);
constexpr FoldPair kFold384 = fold_pair(384), kFold512 = fold_pair(512);
constexpr FoldPair kFold768 = fold_pair(768), kFold1024 = fold_pair(1024);
constexpr FoldPair kFold1536 = fold_pair(1536), kFold2048 = fold_pair(2048);
constexpr uint64_t kR5 = fold_k(64);
constexpr uint64_t kMu = reflect(barrett_mu(), 33);
constexpr uint64_t kPolyReflected33 = reflect(kPoly33, 33);

static_assert(pair_checks(128) && pair_checks(256) && pair_checks(384) && pair_checks(512) &&
              pair_checks(768) && pair_checks(1024) && pair_checks(1536) && pair_checks(2048));
static_assert(kR5 == fold_k_reflected(64));
// The values the literature prints for CRC-32 (IEEE): Intel's white paper
// (k1..k6, mu, P') and zlib-ng's 512-bit folding across 4 x 512 bits.
static_assert(kFold512.lo == 0x154442BD4ull && kFold512.hi == 0x1C6E41596ull);
static_assert(kFold128.lo == 0x1751997D0ull && kFold128.hi == 0x0CCAA009Eull);
static_assert(kR5 == 0x163CD6124ull);
static_assert(kMu == 0x1F7011641ull && kPolyReflected33 == 0x1DB710641ull);
static_assert(kFold2048.lo == 0x11542778Aull && kFold2048.hi == 0x1322D1430ull);

// crc32_update_masked(): the first 64 bytes OR'ed with a mask on the fly.
// Shorter spans are masked in a copy; the portable path masks the first 64
// bytes in a copy and continues on the data.
uint32_t masked_small(uint32_t crc, const uint8_t* p, size_t len, const uint8_t* mask,
                      uint32_t (*fn)(uint32_t, const void*, size_t) noexcept) {
  uint8_t head[64] = {};
  const size_t n = len < 64 ? len : 64;
  for (size_t i = 0; i < n; ++i) head[i] = static_cast<uint8_t>(p[i] | mask[i]);
  crc = fn(crc, head, n);
  return len > 64 ? fn(crc, p + 64, len - 64) : crc;
}

#if defined(__x86_64__)
#define DPDAT_PCLMUL __attribute__((target("pclmul,sse4.1")))
#define DPDAT_PCLMUL_INLINE __attribute__((target("pclmul,sse4.1"), always_inline)) inline
#define DPDAT_VPCLMUL256 __attribute__((target("avx2,vpclmulqdq,pclmul,sse4.1")))
#define DPDAT_VPCLMUL512 __attribute__((target("avx512f,vpclmulqdq,avx2,pclmul,sse4.1")))

DPDAT_PCLMUL_INLINE __m128i k128(FoldPair k) {
  return _mm_set_epi64x(static_cast<long long>(k.hi), static_cast<long long>(k.lo));
}
DPDAT_PCLMUL_INLINE __m128i load128(const uint8_t* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}
// x' = x.lo * k.lo  ^  x.hi * k.hi  ^  next
DPDAT_PCLMUL_INLINE __m128i fold128(__m128i x, __m128i k, __m128i next) {
  const __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
  const __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

// x.lo * k.lo ^ x.hi * k.hi
DPDAT_PCLMUL_INLINE __m128i clmul_pair(__m128i x, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

// Folds the remaining whole 16-byte blocks (len = 0, 16, 32 or 48) into x,
// then reduces to the 32-bit CRC register.  Every block is carried straight
// to the last one with the constant for its own distance, so the products
// are independent: one multiplication on the critical path, not one per block.
DPDAT_PCLMUL_INLINE uint32_t finish128(__m128i x, const uint8_t* p, size_t len) {
  const __m128i k = k128(kFold128);
  switch (len) {
    case 0:
      break;
    case 16:
      x = fold128(x, k, load128(p));
      break;
    case 32:
      x = _mm_xor_si128(clmul_pair(x, k128(kFold256)), fold128(load128(p), k, load128(p + 16)));
      break;
    default:  // 48
      x = _mm_xor_si128(
          _mm_xor_si128(clmul_pair(x, k128(kFold384)), clmul_pair(load128(p), k128(kFold256))),
          fold128(load128(p + 16), k, load128(p + 32)));
      break;
  }
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
  // 128 -> 64 bits.
  __m128i t = _mm_clmulepi64_si128(x, k, 0x10);
  x = _mm_xor_si128(_mm_srli_si128(x, 8), t);
  // 64 -> 32 bits.
  const __m128i k5 = _mm_set_epi64x(0, static_cast<long long>(kR5));
  t = _mm_and_si128(x, mask32);
  x = _mm_srli_si128(x, 4);
  x = _mm_xor_si128(x, _mm_clmulepi64_si128(t, k5, 0x00));
  // Barrett reduction to the 32-bit remainder.
  const __m128i up =
      _mm_set_epi64x(static_cast<long long>(kMu), static_cast<long long>(kPolyReflected33));
  t = _mm_and_si128(x, mask32);
  t = _mm_clmulepi64_si128(t, up, 0x10);
  t = _mm_and_si128(t, mask32);
  t = _mm_clmulepi64_si128(t, up, 0x00);
  x = _mm_xor_si128(x, t);
  return static_cast<uint32_t>(_mm_extract_epi32(x, 1));
}

// The first 64 bytes of a block, OR'ed with `mask` when there is one (the
// masked variants: the RoCEv2 ICRC covers some header fields as all ones).
DPDAT_PCLMUL_INLINE __m128i load128m(const uint8_t* q, const uint8_t* mask, size_t off) {
  const __m128i v = load128(q + off);
  return mask == nullptr ? v : _mm_or_si128(v, load128(mask + off));
}

// c: the running, already-inverted CRC register.  len >= 16, multiple of 16;
// with a mask, len >= 64.
DPDAT_PCLMUL uint32_t fold_pclmul(uint32_t c, const uint8_t* p, size_t len,
                                  const uint8_t* mask = nullptr) {
  __m128i x1 = _mm_xor_si128(load128m(p, mask, 0), _mm_cvtsi32_si128(static_cast<int>(c)));
  if (len < 64) return finish128(x1, p + 16, len - 16);
  const __m128i k4 = k128(kFold512);
  __m128i x2 = load128m(p, mask, 16), x3 = load128m(p, mask, 32), x4 = load128m(p, mask, 48);
  p += 64;
  len -= 64;
  for (; len >= 64; p += 64, len -= 64) {
    x1 = fold128(x1, k4, load128(p));
    x2 = fold128(x2, k4, load128(p + 16));
    x3 = fold128(x3, k4, load128(p + 32));
    x4 = fold128(x4, k4, load128(p + 48));
  }
  // x1, x2, x3 lie 384, 256, 128 bits before x4.
  x1 = _mm_xor_si128(_mm_xor_si128(clmul_pair(x1, k128(kFold384)), clmul_pair(x2, k128(kFold256))),
                     fold128(x3, k128(kFold128), x4));
  return finish128(x1, p, len);
}

// Every vector path: `Fold` over the whole 16-byte blocks (the first 64
// bytes OR'ed with `mask` when there is one), the portable loop for the rest.
template <uint32_t (*Fold)(uint32_t, const uint8_t*, size_t, const uint8_t*)>
uint32_t fold_then_tail(uint32_t crc, const uint8_t* p, size_t len, const uint8_t* mask) {
  const size_t body = len & ~size_t{15};
  const uint32_t c = ~Fold(~crc, p, body, mask);
  return crc32_update_portable(c, p + body, len - body);
}

uint32_t crc32_update_pclmul(uint32_t crc, const void* data, size_t len) noexcept {
  const auto* p = static_cast<const uint8_t*>(data);
  if (len < 16) return crc32_update_portable(crc, p, len);
  return fold_then_tail<fold_pclmul>(crc, p, len, nullptr);
}

// ------------------------------------------------- VPCLMULQDQ, 256 bits
DPDAT_VPCLMUL256 inline __m256i k256(FoldPair k) {
  return _mm256_set_epi64x(static_cast<long long>(k.hi), static_cast<long long>(k.lo),
                           static_cast<long long>(k.hi), static_cast<long long>(k.lo));
}
DPDAT_VPCLMUL256 inline __m256i load256(const uint8_t* q) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
}
DPDAT_VPCLMUL256 inline __m256i clmul_pair256(__m256i x, __m256i k) {
  return _mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
                          _mm256_clmulepi64_epi128(x, k, 0x11));
}

DPDAT_VPCLMUL256 inline __m256i load256m(const uint8_t* q, const uint8_t* mask, size_t off) {
  const __m256i v = load256(q + off);
  return mask == nullptr ? v : _mm256_or_si256(v, load256(mask + off));
}

// len >= 64, multiple of 16.
DPDAT_VPCLMUL256 uint32_t fold_vpclmul256(uint32_t c, const uint8_t* p, size_t len,
                                          const uint8_t* mask = nullptr) {
  __m256i x0 = _mm256_xor_si256(load256m(p, mask, 0),
                                _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0, static_cast<int>(c)));
  const __m256i k256b = k256(kFold256);
  if (len >= 128) {
    const __m256i k1024 = k256(kFold1024);
    __m256i x1 = load256m(p, mask, 32), x2 = load256(p + 64), x3 = load256(p + 96);
    p += 128;
    len -= 128;
    for (; len >= 128; p += 128, len -= 128) {
      x0 = _mm256_xor_si256(clmul_pair256(x0, k1024), load256(p));
      x1 = _mm256_xor_si256(clmul_pair256(x1, k1024), load256(p + 32));
      x2 = _mm256_xor_si256(clmul_pair256(x2, k1024), load256(p + 64));
      x3 = _mm256_xor_si256(clmul_pair256(x3, k1024), load256(p + 96));
    }
    // x0, x1, x2 lie 768, 512, 256 bits before x3.
    x0 = _mm256_xor_si256(
        _mm256_xor_si256(clmul_pair256(x0, k256(kFold768)), clmul_pair256(x1, k256(kFold512))),
        _mm256_xor_si256(clmul_pair256(x2, k256b), x3));
  } else {  // 64 <= len < 128: the second 32 bytes are still in the (masked) head
    x0 = _mm256_xor_si256(clmul_pair256(x0, k256b), load256m(p, mask, 32));
    p += 64;
    len -= 64;
  }
  for (; len >= 32; p += 32, len -= 32) x0 = _mm256_xor_si256(clmul_pair256(x0, k256b), load256(p));
  // 256 -> 128: the low lane lies 128 bits before the high one.
  const __m128i lo = _mm256_castsi256_si128(x0), hi = _mm256_extracti128_si256(x0, 1);
  return finish128(fold128(lo, k128(kFold128), hi), p, len);  // len: 0 or 16
}

uint32_t crc32_update_vpclmul256(uint32_t crc, const void* data, size_t len) noexcept {
  const auto* p = static_cast<const uint8_t*>(data);
  if (len < 64) return crc32_update_pclmul(crc, p, len);
  return fold_then_tail<fold_vpclmul256>(crc, p, len, nullptr);
}

// ------------------------------------------------- VPCLMULQDQ, 512 bits
DPDAT_VPCLMUL512 inline __m512i k512(FoldPair k) {
  const auto lo = static_cast<long long>(k.lo), hi = static_cast<long long>(k.hi);
  return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}
DPDAT_VPCLMUL512 inline __m512i load512(const uint8_t* q) { return _mm512_loadu_si512(q); }
// x.lo * k.lo ^ x.hi * k.hi ^ next, per 128-bit lane.
DPDAT_VPCLMUL512 inline __m512i fold512(__m512i x, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                   _mm512_clmulepi64_epi128(x, k, 0x11), next, 0x96);
}

// One 64-byte block of the data; with kCopy also stored to `d` (the payload
// copy of crc32_copy_masked(): loaded once, folded and written).
template <bool kCopy>
DPDAT_VPCLMUL512 inline __m512i ld512(const uint8_t* p, uint8_t* d, size_t off) {
  const __m512i v = load512(p + off);
  if constexpr (kCopy) _mm512_storeu_si512(d + off, v);
  return v;
}
template <bool kCopy>
DPDAT_VPCLMUL512 inline void skip(const uint8_t*& p, uint8_t*& d, size_t n) {
  p += n;
  if constexpr (kCopy) d += n;
}

// The CRC over head[0..64) (OR'ed with `mask` when there is one) followed by
// len - 64 bytes at p; with kCopy those bytes are also copied to d.
// len >= 64, multiple of 16.  Plain use: head = data, p = data + 64.
template <bool kCopy>
DPDAT_VPCLMUL512 uint32_t fold512_impl(uint32_t c, const uint8_t* head, const uint8_t* mask,
                                       const uint8_t* p, uint8_t* d, size_t len) {
  __m512i x0 = load512(head);
  if (mask != nullptr) x0 = _mm512_or_si512(x0, load512(mask));
  x0 = _mm512_xor_si512(x0, _mm512_maskz_set1_epi32(1, static_cast<int>(c)));
  const __m512i k512b = k512(kFold512);
  len -= 64;
  if (len >= 192) {
    const __m512i k2048 = k512(kFold2048);
    __m512i x1 = ld512<kCopy>(p, d, 0), x2 = ld512<kCopy>(p, d, 64), x3 = ld512<kCopy>(p, d, 128);
    skip<kCopy>(p, d, 192);
    len -= 192;
    for (; len >= 256; skip<kCopy>(p, d, 256), len -= 256) {
      x0 = fold512(x0, k2048, ld512<kCopy>(p, d, 0));
      x1 = fold512(x1, k2048, ld512<kCopy>(p, d, 64));
      x2 = fold512(x2, k2048, ld512<kCopy>(p, d, 128));
      x3 = fold512(x3, k2048, ld512<kCopy>(p, d, 192));
    }
    // x0, x1, x2 lie 1536, 1024, 512 bits before x3; the six products are
    // independent, only the three-way XORs chain.
    const __m512i k1536 = k512(kFold1536), k1024 = k512(kFold1024);
    __m512i t = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x0, k1536, 0x00),
                                          _mm512_clmulepi64_epi128(x0, k1536, 0x11),
                                          _mm512_clmulepi64_epi128(x1, k1024, 0x00), 0x96);
    t = _mm512_ternarylogic_epi64(t, _mm512_clmulepi64_epi128(x1, k1024, 0x11),
                                  _mm512_clmulepi64_epi128(x2, k512b, 0x00), 0x96);
    x0 = _mm512_ternarylogic_epi64(t, _mm512_clmulepi64_epi128(x2, k512b, 0x11), x3, 0x96);
  }
  for (; len >= 64; skip<kCopy>(p, d, 64), len -= 64)
    x0 = fold512(x0, k512b, ld512<kCopy>(p, d, 0));
  // 512 -> 128: lanes 0, 1, 2 lie 384, 256, 128 bits before lane 3, which is
  // multiplied by 0 here and put back unchanged by the masked move.
  const __m512i kl = _mm512_set_epi64(
      0, 0, static_cast<long long>(kFold128.hi), static_cast<long long>(kFold128.lo),
      static_cast<long long>(kFold256.hi), static_cast<long long>(kFold256.lo),
      static_cast<long long>(kFold384.hi), static_cast<long long>(kFold384.lo));
  __m512i t = _mm512_xor_si512(_mm512_clmulepi64_epi128(x0, kl, 0x00),
                               _mm512_clmulepi64_epi128(x0, kl, 0x11));
  t = _mm512_mask_mov_epi64(t, 0xC0, x0);
  // XOR the four lanes together.  (The zero-masked forms with a full mask are
  // the plain instructions; GCC 12's unmasked extract intrinsics start from an
  // "undefined" vector that trips -Wuninitialized.)
  const __m256i h = _mm256_xor_si256(_mm512_maskz_extracti64x4_epi64(0xF, t, 0),
                                     _mm512_maskz_extracti64x4_epi64(0xF, t, 1));
  const __m128i x = _mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  if constexpr (kCopy) {
    // The last 0..48 bytes: copied in 16-byte blocks that finish128 reads
    // straight back (same address and width: forwarded from the stores).
    for (size_t k = 0; k < len; k += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + k), load128(p + k));
    return finish128(x, d, len);
  } else {
    return finish128(x, p, len);
  }
}

// len >= 64, multiple of 16.
DPDAT_VPCLMUL512 uint32_t fold_vpclmul512(uint32_t c, const uint8_t* p, size_t len,
                                          const uint8_t* mask = nullptr) {
  return fold512_impl<false>(c, p, mask, p + 64, nullptr, len);
}

uint32_t crc32_update_vpclmul512(uint32_t crc, const void* data, size_t len) noexcept {
  const auto* p = static_cast<const uint8_t*>(data);
  if (len < 64) return crc32_update_pclmul(crc, p, len);
  return fold_then_tail<fold_vpclmul512>(crc, p, len, nullptr);
}

// ------------------------------------------------- masked head, all paths
uint32_t crc32_masked_pclmul(uint32_t crc, const void* data, size_t len,
                             const uint8_t* mask) noexcept {
  const auto* p = static_cast<const uint8_t*>(data);
  if (len < 64) return masked_small(crc, p, len, mask, &crc32_update_pclmul);
  return fold_then_tail<fold_pclmul>(crc, p, len, mask);
}

uint32_t crc32_masked_vpclmul256(uint32_t crc, const void* data, size_t len,
                                 const uint8_t* mask) noexcept {
  const auto* p = static_cast<const uint8_t*>(data);
  if (len < 64) return masked_small(crc, p, len, mask, &crc32_update_vpclmul256);
  return fold_then_tail<fold_vpclmul256>(crc, p, len, mask);
}

uint32_t crc32_masked_vpclmul512(uint32_t crc, const void* data, size_t len,
                                 const uint8_t* mask) noexcept {
  const auto* p = static_cast<const uint8_t*>(data);
  if (len < 64) return masked_small(crc, p, len, mask, &crc32_update_vpclmul512);
  return fold_then_tail<fold_vpclmul512>(crc, p, len, mask);
}

// ------------------------------------------- payload copy in the same pass
uint32_t crc32_copy_masked_vpclmul512(uint32_t crc, uint8_t* head, size_t h, const uint8_t* mask,
                                      const uint8_t* src, size_t n) noexcept {
  uint8_t* const dst = head + h;
  const size_t total = h + n;
  if (h > 64 && n >= 2048) {
    // Headers longer than a block (a gather piece copied behind them): their
    // CRC first, then the payload's in the copying pass from there.  The
    // second fold's set-up and reduction cost about what the pass saves on
    // 1 KiB (wire_bench BM_BuildGather: 87-96 ns against 67-72 copying
    // first); from 2 KiB on the pass wins.
    return crc32_copy_masked_vpclmul512(crc32_masked_vpclmul512(crc, head, h, mask), dst, 0,
                                        nullptr, src, n);
  }
  if (h > 64 || total < 128) {  // too short to gain
    if (n != 0) std::memcpy(dst, src, n);
    return crc32_masked_vpclmul512(crc, head, total, mask);
  }
  // The payload bytes that share the first 64-byte block with the headers go
  // in first; the rest is loaded once, folded and stored.
  const size_t pre = 64 - h;
  std::memcpy(dst, src, pre);
  const size_t body = total & ~size_t{15};
  const uint32_t c = ~fold512_impl<true>(~crc, head, mask, src + pre, head + 64, body);
  const size_t done = body - h;  // payload bytes in place
  std::memcpy(dst + done, src + done, n - done);
  return crc32_update_portable(c, head + body, total - body);
}

// ------------------------------------------------------- CPU detection
struct CpuFeatures {
  bool pclmul = false;      // PCLMULQDQ + SSE4.1
  bool vpclmul256 = false;  // AVX2 + VPCLMULQDQ, YMM state enabled by the OS
  bool vpclmul512 = false;  // AVX-512F + VPCLMULQDQ, ZMM and opmask state enabled
};

CpuFeatures detect_cpu() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  f.pclmul = (c & bit_PCLMUL) != 0 && (c & bit_SSE4_1) != 0;
  const bool osxsave = (c & bit_OSXSAVE) != 0, avx = (c & bit_AVX) != 0;
  if (!f.pclmul || !osxsave || !avx) return f;
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool os_ymm = (xcr0_lo & 0x6u) == 0x6u;    // SSE, AVX
  const bool os_zmm = (xcr0_lo & 0xE6u) == 0xE6u;  // + opmask, ZMM_Hi256, Hi16_ZMM
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return f;
  const bool avx2 = (b & bit_AVX2) != 0, avx512f = (b & bit_AVX512F) != 0;
  const bool vpclmul = (c & (1u << 10)) != 0;  // CPUID.(EAX=7,ECX=0):ECX[10]
  f.vpclmul256 = os_ymm && avx2 && vpclmul;
  f.vpclmul512 = f.vpclmul256 && os_zmm && avx512f;
  return f;
}
#endif  // __x86_64__

using CrcFn = uint32_t (*)(uint32_t, const void*, size_t) noexcept;
using MaskedFn = uint32_t (*)(uint32_t, const void*, size_t, const uint8_t*) noexcept;
using CopyFn = uint32_t (*)(uint32_t, uint8_t*, size_t, const uint8_t*, const uint8_t*,
                            size_t) noexcept;

uint32_t crc32_masked_portable(uint32_t crc, const void* data, size_t len,
                               const uint8_t* mask) noexcept {
  return masked_small(crc, static_cast<const uint8_t*>(data), len, mask, &crc32_update_portable);
}

// Paths without a fused loop: the copy, then the masked CRC over the whole.
template <MaskedFn kMasked>
uint32_t copy_then_crc(uint32_t crc, uint8_t* head, size_t h, const uint8_t* mask,
                       const uint8_t* src, size_t n) noexcept {
  if (n != 0) std::memcpy(head + h, src, n);
  return kMasked(crc, head, h + n, mask);
}

struct Dispatch {
  bool supported[kCrc32PathCount] = {true, false, false, false};
  CrcFn fn[kCrc32PathCount] = {&crc32_update_portable, &crc32_update_portable,
                               &crc32_update_portable, &crc32_update_portable};
  MaskedFn masked[kCrc32PathCount] = {&crc32_masked_portable, &crc32_masked_portable,
                                      &crc32_masked_portable, &crc32_masked_portable};
  CopyFn copy[kCrc32PathCount] = {
      &copy_then_crc<&crc32_masked_portable>, &copy_then_crc<&crc32_masked_portable>,
      &copy_then_crc<&crc32_masked_portable>, &copy_then_crc<&crc32_masked_portable>};
  Crc32Path active = Crc32Path::kPortable;
};

constexpr const char* kPathNames[kCrc32PathCount] = {"portable", "pclmul", "vpclmul256",
                                                     "vpclmul512"};

Dispatch make_dispatch() {
  Dispatch d;
#if defined(__x86_64__)
  const CpuFeatures f = detect_cpu();
  const bool have[kCrc32PathCount] = {true, f.pclmul, f.vpclmul256, f.vpclmul512};
  const CrcFn fns[kCrc32PathCount] = {&crc32_update_portable, &crc32_update_pclmul,
                                      &crc32_update_vpclmul256, &crc32_update_vpclmul512};
  const MaskedFn masked[kCrc32PathCount] = {&crc32_masked_portable, &crc32_masked_pclmul,
                                            &crc32_masked_vpclmul256, &crc32_masked_vpclmul512};
  const CopyFn copies[kCrc32PathCount] = {
      &copy_then_crc<&crc32_masked_portable>, &copy_then_crc<&crc32_masked_pclmul>,
      &copy_then_crc<&crc32_masked_vpclmul256>, &crc32_copy_masked_vpclmul512};
  for (size_t i = 0; i < kCrc32PathCount; ++i) {
    d.supported[i] = have[i];
    if (have[i]) {
      d.fn[i] = fns[i];
      d.masked[i] = masked[i];
      d.copy[i] = copies[i];
      d.active = static_cast<Crc32Path>(i);
    }
  }
#endif
  if (const auto want = settings::get(settings::Var::kCrc32)) {
    for (size_t i = 0; i < kCrc32PathCount; ++i)
      if (*want == kPathNames[i] && d.supported[i]) d.active = static_cast<Crc32Path>(i);
  }
  return d;
}

// A function-local static, so that static initialisers in other translation
// units may already call into this file.
const Dispatch& dispatch() {
  static const Dispatch d = make_dispatch();
  return d;
}
const CrcFn kChosen = dispatch().fn[static_cast<size_t>(dispatch().active)];
const MaskedFn kChosenMasked = dispatch().masked[static_cast<size_t>(dispatch().active)];
const CopyFn kChosenCopy = dispatch().copy[static_cast<size_t>(dispatch().active)];

size_t path_index(Crc32Path p) {
  const auto i = static_cast<size_t>(p);
  return i < kCrc32PathCount ? i : 0;
}

}  // namespace

uint32_t crc32_update(uint32_t crc, const void* data, size_t len) noexcept {
  CrcFn f = kChosen;
  if (__builtin_expect(f == nullptr, 0)) f = dispatch().fn[static_cast<size_t>(dispatch().active)];
  return f(crc, data, len);
}

uint32_t crc32_update_masked(uint32_t crc, const void* data, size_t len,
                             const uint8_t* mask) noexcept {
  MaskedFn f = kChosenMasked;
  if (__builtin_expect(f == nullptr, 0))
    f = dispatch().masked[static_cast<size_t>(dispatch().active)];
  return f(crc, data, len, mask);
}

uint32_t crc32_update_masked_with(Crc32Path path, uint32_t crc, const void* data, size_t len,
                                  const uint8_t* mask) noexcept {
  return dispatch().masked[path_index(path)](crc, data, len, mask);
}

uint32_t crc32_copy_masked(uint32_t crc, uint8_t* head, size_t h, const uint8_t* mask,
                           const uint8_t* src, size_t n) noexcept {
  CopyFn f = kChosenCopy;
  if (__builtin_expect(f == nullptr, 0))
    f = dispatch().copy[static_cast<size_t>(dispatch().active)];
  return f(crc, head, h, mask, src, n);
}

uint32_t crc32_copy_masked_with(Crc32Path path, uint32_t crc, uint8_t* head, size_t h,
                                const uint8_t* mask, const uint8_t* src, size_t n) noexcept {
  return dispatch().copy[path_index(path)](crc, head, h, mask, src, n);
}

bool crc32_path_supported(Crc32Path path) noexcept {
  const auto i = static_cast<size_t>(path);
  return i < kCrc32PathCount && dispatch().supported[i];
}

uint32_t crc32_update_with(Crc32Path path, uint32_t crc, const void* data, size_t len) noexcept {
  return dispatch().fn[path_index(path)](crc, data, len);
}

const char* crc32_path_name(Crc32Path path) noexcept {
  const auto i = static_cast<size_t>(path);
  return i < kCrc32PathCount ? kPathNames[i] : "invalid";
}

Crc32Path crc32_active_path() noexcept { return dispatch().active; }

const char* crc32_impl_name() noexcept { return crc32_path_name(dispatch().active); }

}  // namespace dpdat::wire
