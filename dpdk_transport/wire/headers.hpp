#pragma once
// RoCEv2 frame headers: Ethernet / IPv4 / UDP (dst 4791) / IBA transport
// headers.  Every struct is byte-addressed (alignment 1) with its on-wire size
// static_assert'ed; multi-byte fields are big-endian strong types; 24-bit
// fields and flag bits are reached only through mask accessors (no bitfields).
// Field names follow the IBA specification (vol. 1, ch. 9) and rxe.

#include <array>
#include <cstddef>
#include <cstdint>

#include "be.hpp"
#include "psn.hpp"

namespace dpdat::wire {

inline constexpr uint16_t kRoceV2Port = 4791;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr size_t kIcrcSize = 4;

using MacAddr = std::array<uint8_t, 6>;

struct EthHdr {
  MacAddr dst;
  MacAddr src;
  Be16 ether_type;
};
static_assert(sizeof(EthHdr) == 14 && alignof(EthHdr) == 1);

struct Ipv4Hdr {
  uint8_t version_ihl;  // version (high nibble), IHL in 32-bit words (low)
  uint8_t tos;
  Be16 total_length;
  Be16 id;
  Be16 frag_off;  // flags (3 bits) + fragment offset (13 bits)
  uint8_t ttl;
  uint8_t protocol;
  Be16 checksum;
  Be32 src;
  Be32 dst;

  static constexpr uint16_t kFlagMf = 0x2000;
  static constexpr uint16_t kFlagDf = 0x4000;
  static constexpr uint16_t kOffsetMask = 0x1FFF;

  constexpr uint8_t version() const { return static_cast<uint8_t>(version_ihl >> 4); }
  constexpr uint8_t ihl() const { return version_ihl & 0x0F; }
};
static_assert(sizeof(Ipv4Hdr) == 20 && alignof(Ipv4Hdr) == 1);
static_assert(offsetof(Ipv4Hdr, checksum) == 10 && offsetof(Ipv4Hdr, dst) == 16);

struct UdpHdr {
  Be16 src_port;
  Be16 dst_port;
  Be16 length;
  Be16 checksum;
};
static_assert(sizeof(UdpHdr) == 8 && alignof(UdpHdr) == 1);

// Base Transport Header (IBA 9.2).
//   byte 0      OpCode
//   byte 1      SE(7) M(6) PadCnt(5:4) TVer(3:0)
//   bytes 2-3   P_Key
//   byte 4      FECN(7) BECN(6) reserved  (RoCEv2: "resv8a", masked in the ICRC)
//   bytes 5-7   DestQP
//   byte 8      AckReq(7) reserved
//   bytes 9-11  PSN
struct Bth {
  uint8_t opcode;
  uint8_t flags;
  Be16 pkey;
  uint8_t resv8a;
  Be24 dest_qp_;
  uint8_t ack_resv;
  Be24 psn_;

  static constexpr uint8_t kSe = 0x80;
  static constexpr uint8_t kMig = 0x40;
  static constexpr uint8_t kPadMask = 0x30;
  static constexpr uint8_t kPadShift = 4;
  static constexpr uint8_t kTverMask = 0x0F;
  static constexpr uint8_t kAckReq = 0x80;
  // A bit of the reserved field after AckReq (IBA: sent 0, ignored by a
  // receiver) that dpdat sets on an RDMA WRITE Only which is not the last
  // packet of its work request (a WRITE the requester sends self-describing
  // for selective repeat): a dpdat responder counts the WRITE once, at the
  // packet without it (FI_RMA_EVENT counters).
  static constexpr uint8_t kWriteMore = 0x40;
  static constexpr uint8_t kFecn = 0x80;
  static constexpr uint8_t kBecn = 0x40;
  static constexpr uint16_t kDefaultPkey = 0xFFFF;

  constexpr bool se() const { return (flags & kSe) != 0; }
  constexpr bool mig() const { return (flags & kMig) != 0; }
  constexpr uint8_t pad() const { return static_cast<uint8_t>((flags & kPadMask) >> kPadShift); }
  constexpr uint8_t tver() const { return flags & kTverMask; }
  constexpr bool ack_req() const { return (ack_resv & kAckReq) != 0; }
  constexpr bool write_more() const { return (ack_resv & kWriteMore) != 0; }
  constexpr uint32_t dest_qp() const { return dest_qp_.value(); }
  constexpr Psn psn() const { return Psn(psn_.value()); }

  constexpr void set_se(bool v) {
    flags = static_cast<uint8_t>(v ? (flags | kSe) : (flags & ~kSe));
  }
  constexpr void set_mig(bool v) {
    flags = static_cast<uint8_t>(v ? (flags | kMig) : (flags & ~kMig));
  }
  constexpr void set_pad(uint8_t pad) {
    flags = static_cast<uint8_t>((flags & ~kPadMask) | ((pad << kPadShift) & kPadMask));
  }
  constexpr void set_tver(uint8_t v) {
    flags = static_cast<uint8_t>((flags & ~kTverMask) | (v & kTverMask));
  }
  constexpr void set_ack_req(bool v) {
    ack_resv = static_cast<uint8_t>(v ? (ack_resv | kAckReq) : (ack_resv & ~kAckReq));
  }
  constexpr void set_dest_qp(uint32_t qpn) { dest_qp_.set(qpn & 0xFFFFFF); }
  constexpr void set_psn(Psn p) { psn_.set(p.value()); }
};
static_assert(sizeof(Bth) == 12 && alignof(Bth) == 1);
static_assert(offsetof(Bth, resv8a) == 4 && offsetof(Bth, dest_qp_) == 5 &&
              offsetof(Bth, ack_resv) == 8 && offsetof(Bth, psn_) == 9);

// Datagram Extended Transport Header (IBA 9.3.2), carried by UD packets:
//   bytes 0-3   Q_Key
//   byte 4      reserved
//   bytes 5-7   SrcQP
struct Deth {
  Be32 qkey;
  uint8_t resv;
  Be24 src_qp_;

  constexpr uint32_t src_qp() const { return src_qp_.value(); }
  constexpr void set_src_qp(uint32_t qpn) { src_qp_.set(qpn & 0xFFFFFF); }
};
static_assert(sizeof(Deth) == 8 && alignof(Deth) == 1);
static_assert(offsetof(Deth, resv) == 4 && offsetof(Deth, src_qp_) == 5);

// RDMA Extended Transport Header (IBA 9.3.3).
struct Reth {
  Be64 va;
  Be32 rkey;
  Be32 dma_len;
};
static_assert(sizeof(Reth) == 16 && alignof(Reth) == 1);

// ACK Extended Transport Header (IBA 9.3.5): syndrome + 24-bit MSN.
struct Aeth {
  uint8_t syndrome;
  Be24 msn_;

  constexpr uint32_t msn() const { return msn_.value(); }
  constexpr void set_msn(uint32_t m) { msn_.set(m & 0xFFFFFF); }
};
static_assert(sizeof(Aeth) == 4 && alignof(Aeth) == 1);

// AETH syndrome encoding (IBA 9.7.5.2.1, table 43):
//   bits 6:5 type: 00 ACK, 01 RNR NAK, 11 NAK; bits 4:0 value
//   ACK: credit count; RNR NAK: RNR timer code; NAK: NAK code.
namespace aeth {
inline constexpr uint8_t kTypeMask = 0x60;
inline constexpr uint8_t kValueMask = 0x1F;
inline constexpr uint8_t kAck = 0x00;
inline constexpr uint8_t kRnrNak = 0x20;
inline constexpr uint8_t kNak = 0x60;
inline constexpr uint8_t kNakPsnSeqError = 0;
inline constexpr uint8_t kNakInvalidRequest = 1;
inline constexpr uint8_t kNakRemoteAccessError = 2;
inline constexpr uint8_t kNakRemoteOperationalError = 3;
inline constexpr uint8_t kNakInvalidRdRequest = 4;
inline constexpr uint8_t kCreditsInvalid = 0x1F;  // "no credit information"
constexpr uint8_t type(uint8_t syndrome) { return syndrome & kTypeMask; }
constexpr uint8_t value(uint8_t syndrome) { return syndrome & kValueMask; }
constexpr uint8_t make(uint8_t type, uint8_t value) {
  return static_cast<uint8_t>((type & kTypeMask) | (value & kValueMask));
}
}  // namespace aeth

// Atomic Extended Transport Header (IBA 9.3.4).
struct AtomicEth {
  Be64 va;
  Be32 rkey;
  Be64 swap_add;
  Be64 compare;
};
static_assert(sizeof(AtomicEth) == 28 && alignof(AtomicEth) == 1);
static_assert(offsetof(AtomicEth, swap_add) == 12 && offsetof(AtomicEth, compare) == 20);

// Atomic Acknowledge Extended Transport Header (IBA 9.5.3).
struct AtomicAckEth {
  Be64 orig;
};
static_assert(sizeof(AtomicAckEth) == 8 && alignof(AtomicAckEth) == 1);

// Immediate Data Extended Transport Header (IBA 9.3.6): opaque 4 bytes.
struct ImmDt {
  Be32 imm;
};
static_assert(sizeof(ImmDt) == 4 && alignof(ImmDt) == 1);

// Invalidate Extended Transport Header (IBA 9.3.7).
struct Ieth {
  Be32 rkey;
};
static_assert(sizeof(Ieth) == 4 && alignof(Ieth) == 1);

// The 16 reserved bytes after the BTH of a RoCEv2 congestion notification
// packet (RoCEv2 annex A17.9.3: BTH opcode 0x81, then 16 bytes of zeros, then
// the ICRC).  Sent as zeros, ignored on receipt.
struct CnpResv {
  uint8_t resv[16];
};
static_assert(sizeof(CnpResv) == 16 && alignof(CnpResv) == 1);

inline constexpr size_t kL2L3L4Size = sizeof(EthHdr) + sizeof(Ipv4Hdr) + sizeof(UdpHdr);

}  // namespace dpdat::wire
