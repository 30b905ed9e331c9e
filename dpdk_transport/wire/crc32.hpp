#pragma once
// CRC-32 (IEEE 802.3 polynomial 0x04C11DB7, reflected, init ~0, final ~0) —
// the CRC that zlib's crc32() and Ethernet compute and that RoCEv2's ICRC uses.
//
// crc32_update() has zlib semantics: start with 0, feed spans in order,
// the return value after the last span is the CRC of their concatenation.

#include <cstddef>
#include <cstdint>

namespace dpdat::wire {

uint32_t crc32_update(uint32_t crc, const void* data, size_t len) noexcept;

// The portable table-driven path, always available (tests compare the fast
// path against it and against an independent bitwise CRC).
uint32_t crc32_update_portable(uint32_t crc, const void* data, size_t len) noexcept;

// Name of the implementation crc32_update() dispatches to ("pclmul", "slice8").
const char* crc32_impl_name() noexcept;

}  // namespace dpdat::wire
