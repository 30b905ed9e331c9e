#pragma once
// Build and parse complete RoCEv2 frames:
//   Ethernet | IPv4 (no options) | UDP dst 4791 | BTH | ext headers | payload | pad | ICRC
// Pure code: no allocation, no DPDK, no exceptions.  The parser never reads
// outside the span it is given and checks lengths against the opcode table
// before touching a field.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "headers.hpp"
#include "opcode.hpp"
#include "psn.hpp"

namespace dpdat::wire {

// ---------------------------------------------------------------- checksums

// RFC 791 header checksum of a 20-byte IPv4 header (checksum field included:
// returns 0 for a header whose checksum is correct when verifying).
uint16_t ipv4_checksum(const Ipv4Hdr& ip) noexcept;

// RoCEv2 ICRC over a contiguous frame that starts at the Ethernet header.
// `len` excludes the 4 ICRC bytes.  Variant fields are masked to ones
// (IPv4 TOS, TTL, header checksum; UDP checksum; BTH byte 4) and 8 bytes of
// 0xFF are prepended, as the RoCEv2 annex and Linux rxe define it.
// `len` >= 54 (Ethernet, IPv4, UDP and BTH present).
uint32_t icrc_compute(const uint8_t* frame, size_t len) noexcept;

// Incremental form for frames whose payload is not contiguous with the
// headers: icrc_begin() covers IPv4..BTH (masked), then crc32_update() over
// the extension headers, payload and pad in order.
uint32_t icrc_begin(const Ipv4Hdr& ip, const UdpHdr& udp, const Bth& bth) noexcept;

// ------------------------------------------------------------------ builder

// The UDP source port a queue pair sends from: RoCEv2 leaves it free as flow
// entropy (ECMP, RSS), so each queue pair takes its own from the dynamic
// range, 0xC000 | its QPN's low 14 bits.
constexpr uint16_t roce_src_port(uint32_t qpn) noexcept {
  return static_cast<uint16_t>(0xC000u | (qpn & 0x3FFFu));
}

struct BuildSpec {
  MacAddr src_mac{};
  MacAddr dst_mac{};
  uint32_t src_ip = 0;  // host byte order
  uint32_t dst_ip = 0;
  uint16_t src_port = 0xC000;  // UDP source port: per-QP entropy for ECMP/RSS
  uint8_t tos = 0;
  uint8_t ttl = 64;
  uint16_t ip_id = 0;
  // Leave the IPv4 header checksum 0: the device computes it (TX offload).
  bool ip_csum_offload = false;

  Opcode opcode = Opcode::kSendOnly;
  uint32_t dest_qp = 0;
  Psn psn;
  bool ack_req = false;
  bool write_more = false;  // Bth::kWriteMore
  bool se = false;
  bool mig = true;
  uint16_t pkey = Bth::kDefaultPkey;

  // Extension header fields, written when the opcode table says the header is
  // present and ignored otherwise.
  uint32_t qkey = 0;         // DETH
  uint32_t src_qp = 0;       // DETH
  uint64_t va = 0;           // RETH / AtomicETH
  uint32_t rkey = 0;         // RETH / AtomicETH
  uint32_t dma_len = 0;      // RETH
  uint64_t swap_add = 0;     // AtomicETH
  uint64_t compare = 0;      // AtomicETH
  uint8_t syndrome = 0;      // AETH
  uint32_t msn = 0;          // AETH
  uint64_t atomic_orig = 0;  // AtomicAckETH
  uint32_t imm = 0;          // ImmDt (opaque; written in network order)
  uint32_t inv_rkey = 0;     // IETH

  // Payload: either one span, or (when `gather` is non-empty) the
  // concatenation of several spans, e.g. pieces of several registered regions.
  std::span<const uint8_t> payload;
  std::span<const std::span<const uint8_t>> gather;

  size_t payload_size() const {
    if (gather.empty()) return payload.size();
    size_t n = 0;
    for (const auto& g : gather) n += g.size();
    return n;
  }
};

enum class BuildError : uint8_t {
  kOk,
  kBufferTooSmall,
  kInvalidOpcode,
  kPayloadNotAllowed,  // opcode carries no payload
  kPmtuExceeded,       // payload > PMTU
  kNotFullPmtu,        // FIRST/MIDDLE packets must carry exactly PMTU bytes
  kInvalidPmtu,
  kEmptyLast,  // LAST packets of a multi-packet message carry 1..PMTU bytes
};

struct BuildResult {
  size_t len = 0;
  BuildError error = BuildError::kOk;
  bool ok() const { return error == BuildError::kOk; }
};

// Bytes of pad that bring `payload_len` to a multiple of 4.
constexpr uint8_t pad_for(size_t payload_len) {
  return static_cast<uint8_t>((4 - (payload_len & 3)) & 3);
}

// Total frame size for an opcode and payload length (with pad and ICRC).
constexpr size_t frame_size(Opcode o, size_t payload_len) {
  return kL2L3L4Size + op_info(o).hdr_len + payload_len + pad_for(payload_len) + kIcrcSize;
}

// Writes the complete frame into `out`.  The payload is copied once from
// spec.payload (the registered memory) into the frame.
BuildResult build_packet(std::span<uint8_t> out, const BuildSpec& spec, uint32_t pmtu) noexcept;

// ------------------------------------------------------------------- parser

enum class Reject : uint8_t {
  kNone,
  kTruncated,  // span shorter than a header or than IPv4 total length says
  kNotIpv4,    // EtherType is not IPv4
  kBadIpVersion,
  kBadIpIhl,     // IHL != 5: RoCEv2 frames carry no IP options
  kBadIpLength,  // total length too small for IPv4+UDP
  kIpFragment,   // MF set or non-zero fragment offset
  kBadIpChecksum,
  kNotUdp,
  kNotRocePort,     // UDP destination port is not 4791
  kBadUdpLength,    // UDP length disagrees with IPv4 total length
  kUnknownOpcode,   // reserved, or an opcode the table does not define (UC, RD, most UD)
  kBadTver,         // BTH transport header version is not 0
  kLengthMismatch,  // header/payload length disagrees with the opcode table
  kBadPadCount,
  kPmtuExceeded,
  kBadIcrc,
  kCount
};

std::string_view reject_name(Reject r) noexcept;

struct ParseOptions {
  uint32_t pmtu = 4096;
  // FIRST/MIDDLE packets must carry exactly `pmtu` bytes.  A receiver whose
  // queue pairs use different PMTUs parses with its largest PMTU, turns this
  // off and lets each queue pair check its own segment size.
  bool full_segments = true;
  bool check_ip_checksum = true;
  bool check_icrc = true;
};

// A parsed frame.  Pointers alias the caller's buffer and are null for
// headers the opcode does not carry.  parse_packet() assigns every field
// itself (callers may reuse a view without resetting it): a new field needs
// its assignment there.
struct PacketView {
  std::span<const uint8_t> frame;  // Ethernet header .. ICRC (IPv4 total length + 14)
  const EthHdr* eth = nullptr;
  const Ipv4Hdr* ip = nullptr;
  const UdpHdr* udp = nullptr;
  const Bth* bth = nullptr;
  const Deth* deth = nullptr;
  const Reth* reth = nullptr;
  const AtomicEth* atomic = nullptr;
  const Aeth* aeth = nullptr;
  const AtomicAckEth* atomic_ack = nullptr;
  const ImmDt* imm = nullptr;
  const Ieth* ieth = nullptr;
  Opcode opcode = Opcode::kSendOnly;
  const OpInfo* info = nullptr;
  std::span<const uint8_t> payload;  // without pad
  uint8_t pad = 0;
  uint32_t icrc = 0;
};

Reject parse_packet(std::span<const uint8_t> frame, const ParseOptions& opts,
                    PacketView& out) noexcept;

// The view `v` of a parsed frame moved onto `copy`, which holds the same
// bytes as v.frame (a frame kept after its receive buffer is gone).
PacketView rebase_view(const PacketView& v, std::span<const uint8_t> copy) noexcept;

}  // namespace dpdat::wire
