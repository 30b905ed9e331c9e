#pragma once
// Reference CRC-32 and RoCEv2 ICRC written from the definitions, independent
// of dpdk_transport/wire, so tests can judge the product's fast paths.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dpdat::testref {

// Bitwise CRC-32 (IEEE 802.3, reflected, init and final ~0).
inline uint32_t crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// The RoCEv2 ICRC of a frame starting at its Ethernet header, `len` bytes
// without the ICRC: 8 x 0xFF, then IPv4 with TOS, TTL and checksum as ones,
// UDP with its checksum as ones, BTH with byte 4 as ones, then the rest.
inline uint32_t icrc(const uint8_t* frame, size_t len) {
  std::vector<uint8_t> m(len - 14 + 8, 0xFF);
  std::copy(frame + 14, frame + len, m.begin() + 8);
  uint8_t* ip = m.data() + 8;
  ip[1] = 0xFF;            // TOS
  ip[8] = 0xFF;            // TTL
  ip[10] = ip[11] = 0xFF;  // header checksum
  uint8_t* udp = ip + 20;
  udp[6] = udp[7] = 0xFF;  // UDP checksum
  udp[8 + 4] = 0xFF;       // BTH byte 4 (resv8a / FECN / BECN)
  return crc32(m.data(), m.size());
}

}  // namespace dpdat::testref
