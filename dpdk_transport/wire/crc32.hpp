#pragma once
// CRC-32 (IEEE 802.3 polynomial 0x04C11DB7, reflected, init ~0, final ~0) —
// the CRC that zlib's crc32() and Ethernet compute and that RoCEv2's ICRC uses.
//
// crc32_update() has zlib semantics: start with 0, feed spans in order,
// the return value after the last span is the CRC of their concatenation.
//
// Implementations (all give identical results; any thread may call any of
// them, they keep no state):
//   portable    slice-by-8 tables, any CPU;
//   pclmul      x86-64 PCLMULQDQ + SSE4.1, 4 x 128-bit lanes folded per 64 B;
//   vpclmul256  x86-64 AVX2 + VPCLMULQDQ, 4 x 256-bit lanes per 128 B;
//   vpclmul512  x86-64 AVX-512F + VPCLMULQDQ, 4 x 512-bit lanes per 256 B.
// crc32_update() uses the fastest one the CPU and OS support, chosen once at
// load time from CPUID/XGETBV.  The environment variable DPDAT_CRC32=<name>
// forces a slower path (for A/B measurements); an unsupported or unknown name
// is ignored.

#include <cstddef>
#include <cstdint>

namespace dpdat::wire {

enum class Crc32Path : uint8_t { kPortable, kPclmul, kVpclmul256, kVpclmul512 };
inline constexpr size_t kCrc32PathCount = 4;

uint32_t crc32_update(uint32_t crc, const void* data, size_t len) noexcept;

// crc32_update() over `len` bytes at `data` whose first min(len, 64) bytes
// are taken OR'ed with mask[0..64): one pass over the data, no copy.  The
// RoCEv2 ICRC covers some header fields as all ones (icrc_compute()).
uint32_t crc32_update_masked(uint32_t crc, const void* data, size_t len,
                             const uint8_t* mask) noexcept;

// Copies n bytes from `src` to head + h and returns
// crc32_update_masked(crc, head, h + n, mask): a payload copied behind its
// headers and the CRC over both, in one pass over the payload where the path
// has a fused loop (vpclmul512), copy-then-CRC otherwise.  src must not
// overlap [head, head + h + n).
uint32_t crc32_copy_masked(uint32_t crc, uint8_t* head, size_t h, const uint8_t* mask,
                           const uint8_t* src, size_t n) noexcept;

// The portable table-driven path, always available (tests compare the fast
// path against it and against an independent bitwise CRC).
uint32_t crc32_update_portable(uint32_t crc, const void* data, size_t len) noexcept;

// Whether this CPU (and OS register state) can run `path`.
bool crc32_path_supported(Crc32Path path) noexcept;

// crc32_update() through one given path, for tests and benchmarks.  An
// unsupported path is not executed (that would be SIGILL): the portable path
// answers instead, so callers that care check crc32_path_supported() first.
uint32_t crc32_update_with(Crc32Path path, uint32_t crc, const void* data, size_t len) noexcept;

// crc32_update_masked() through one given path (same rule as above).
uint32_t crc32_update_masked_with(Crc32Path path, uint32_t crc, const void* data, size_t len,
                                  const uint8_t* mask) noexcept;

// crc32_copy_masked() through one given path (same rule as above).
uint32_t crc32_copy_masked_with(Crc32Path path, uint32_t crc, uint8_t* head, size_t h,
                                const uint8_t* mask, const uint8_t* src, size_t n) noexcept;

// "portable", "pclmul", "vpclmul256", "vpclmul512".
const char* crc32_path_name(Crc32Path path) noexcept;

// The path crc32_update() dispatches to.
Crc32Path crc32_active_path() noexcept;

// crc32_path_name(crc32_active_path()).
const char* crc32_impl_name() noexcept;

}  // namespace dpdat::wire
