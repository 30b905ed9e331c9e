#include "crc32.hpp"

#include <array>
#include <bit>
#include <cstring>

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

namespace dpdat::wire {
// Dispatch: the portable path until a faster one is wired in.
uint32_t crc32_update(uint32_t crc, const void* data, size_t len) noexcept {
  return crc32_update_portable(crc, data, len);
}
const char* crc32_impl_name() noexcept { return "slice8"; }
}  // namespace dpdat::wire
