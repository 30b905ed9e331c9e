#pragma once
// The opcode table: the single source of truth for which extension headers
// follow the BTH, where they sit, what the packet may carry and what it means.
// It holds the 23 RC opcodes, the two UD opcodes, SEND Only (which also
// carries the connection-management MADs to and from the GSI, QP1; see
// cm.hpp) and SEND Only with Immediate, and the
// RoCEv2 congestion notification packet (CNP, annex A17.9.3), which a
// receiver that saw ECN CE sends to the sending queue pair.  RC queue pairs
// never see a UD opcode: the engine routes those (op::kUd) to the GSI or to
// a UD queue pair (rc/ud/).
// Opcode and OpFlags are distinct types: `opcode & kSend` does not compile.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "headers.hpp"

namespace dpdat::wire {

// IBA table 35, RC transport (upper 3 bits 000).
enum class Opcode : uint8_t {
  kSendFirst = 0x00,
  kSendMiddle = 0x01,
  kSendLast = 0x02,
  kSendLastImm = 0x03,
  kSendOnly = 0x04,
  kSendOnlyImm = 0x05,
  kWriteFirst = 0x06,
  kWriteMiddle = 0x07,
  kWriteLast = 0x08,
  kWriteLastImm = 0x09,
  kWriteOnly = 0x0A,
  kWriteOnlyImm = 0x0B,
  kReadRequest = 0x0C,
  kReadRespFirst = 0x0D,
  kReadRespMiddle = 0x0E,
  kReadRespLast = 0x0F,
  kReadRespOnly = 0x10,
  kAck = 0x11,
  kAtomicAck = 0x12,
  kCompareSwap = 0x13,
  kFetchAdd = 0x14,
  kSendLastInv = 0x16,
  kSendOnlyInv = 0x17,
  // IBA table 35, UD transport (upper 3 bits 011).
  kUdSendOnly = 0x64,
  kUdSendOnlyImm = 0x65,
  // RoCEv2 annex A17.9.3 (upper 3 bits 100: CNP).
  kCnp = 0x81,
  // dpdat's selective acknowledgement, in the manufacturer-specific range
  // (IBA table 35: upper 3 bits 110): a responder with selective repeat sends
  // it after a sequence NAK, naming which PSNs after the NAK's it holds, so
  // the requester resends every hole at once.  Not an RC opcode: an IBA
  // requester drops it and goes back N on the NAK.
  kSack = 0xC0,
};

// Which extension headers follow the BTH (in this fixed order on the wire:
// DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH — IBA 9.2 figure 56;
// a CNP carries only its 16 reserved bytes).
enum class Ext : uint8_t {
  kDeth,
  kReth,
  kAtomicEth,
  kAeth,
  kAtomicAckEth,
  kImmDt,
  kIeth,
  kCnpResv,
  kCount
};

class OpFlags {
 public:
  constexpr OpFlags() = default;
  constexpr explicit OpFlags(uint32_t bits) : bits_(bits) {}
  constexpr bool has(OpFlags f) const { return (bits_ & f.bits_) == f.bits_ && f.bits_ != 0; }
  constexpr bool any(OpFlags f) const { return (bits_ & f.bits_) != 0; }
  constexpr uint32_t bits() const { return bits_; }
  friend constexpr OpFlags operator|(OpFlags a, OpFlags b) { return OpFlags(a.bits_ | b.bits_); }
  friend constexpr bool operator==(OpFlags a, OpFlags b) { return a.bits_ == b.bits_; }

 private:
  uint32_t bits_ = 0;
};

namespace op {
inline constexpr OpFlags kRequest{1u << 0};   // sent by the requester
inline constexpr OpFlags kResponse{1u << 1};  // sent by the responder
inline constexpr OpFlags kSend{1u << 2};
inline constexpr OpFlags kWrite{1u << 3};
inline constexpr OpFlags kRead{1u << 4};    // READ request or response
inline constexpr OpFlags kAtomic{1u << 5};  // atomic request or atomic ack
inline constexpr OpFlags kAckOp{1u << 6};   // carries an AETH
inline constexpr OpFlags kFirst{1u << 7};
inline constexpr OpFlags kMiddle{1u << 8};
inline constexpr OpFlags kLast{1u << 9};
inline constexpr OpFlags kOnly{kFirst.bits() | kLast.bits()};
inline constexpr OpFlags kPayload{1u << 10};       // may carry payload
inline constexpr OpFlags kConsumesRecv{1u << 11};  // first packet of a SEND uses a RECV WQE
inline constexpr OpFlags kImm{1u << 12};
inline constexpr OpFlags kInvalidate{1u << 13};
inline constexpr OpFlags kRdmaAccess{1u << 14};  // carries RETH/AtomicETH: checked against an rkey
inline constexpr OpFlags kUd{1u << 15};          // UD transport: never for an RC queue pair
inline constexpr OpFlags kCnp{1u << 16};   // congestion notification (neither request nor response)
inline constexpr OpFlags kSack{1u << 17};  // dpdat selective acknowledgement (vendor opcode)
}  // namespace op

inline constexpr std::array<size_t, static_cast<size_t>(Ext::kCount)> kExtSize = {
    sizeof(Deth),         sizeof(Reth),  sizeof(AtomicEth), sizeof(Aeth),
    sizeof(AtomicAckEth), sizeof(ImmDt), sizeof(Ieth),      sizeof(CnpResv)};

struct OpInfo {
  std::string_view name;  // IBA spelling, as Wireshark prints it
  bool valid = false;
  OpFlags flags;
  uint8_t ext_mask = 0;  // bit i set: Ext(i) present
  // Byte offset of each extension header from the start of the BTH, or 0.
  std::array<uint8_t, static_cast<size_t>(Ext::kCount)> ext_off = {};
  uint8_t hdr_len = 0;  // BTH + extension headers

  constexpr bool has(Ext e) const {
    return ((static_cast<unsigned>(ext_mask) >> static_cast<unsigned>(e)) & 1u) != 0;
  }
  constexpr size_t off(Ext e) const { return ext_off[static_cast<size_t>(e)]; }
  constexpr bool is(OpFlags f) const { return flags.has(f); }
};

namespace detail {
constexpr uint8_t bit(Ext e) { return static_cast<uint8_t>(1u << static_cast<unsigned>(e)); }

constexpr OpInfo make(std::string_view name, OpFlags f, uint8_t exts) {
  OpInfo i;
  i.name = name;
  i.valid = true;
  i.flags = f;
  i.ext_mask = exts;
  size_t off = sizeof(Bth);
  for (size_t e = 0; e < static_cast<size_t>(Ext::kCount); ++e) {
    if (((static_cast<unsigned>(exts) >> e) & 1u) != 0) {
      i.ext_off[e] = static_cast<uint8_t>(off);
      off += kExtSize[e];
    }
  }
  i.hdr_len = static_cast<uint8_t>(off);
  return i;
}

constexpr std::array<OpInfo, 256> build_table() {
  using namespace op;
  constexpr uint8_t D = bit(Ext::kDeth), R = bit(Ext::kReth), A = bit(Ext::kAeth),
                    X = bit(Ext::kAtomicEth), K = bit(Ext::kAtomicAckEth), I = bit(Ext::kImmDt),
                    V = bit(Ext::kIeth), C = bit(Ext::kCnpResv);
  const OpFlags sreq = kRequest | kSend | kPayload;
  const OpFlags wreq = kRequest | kWrite | kPayload;
  const OpFlags rresp = kResponse | kRead | kPayload;
  std::array<OpInfo, 256> t{};
  auto set = [&t](Opcode o, OpInfo i) { t[static_cast<uint8_t>(o)] = i; };
  set(Opcode::kSendFirst, make("RC Send First", sreq | kFirst | kConsumesRecv, 0));
  set(Opcode::kSendMiddle, make("RC Send Middle", sreq | kMiddle, 0));
  set(Opcode::kSendLast, make("RC Send Last", sreq | kLast, 0));
  set(Opcode::kSendLastImm, make("RC Send Last Immediate", sreq | kLast | kImm, I));
  set(Opcode::kSendOnly, make("RC Send Only", sreq | kOnly | kConsumesRecv, 0));
  set(Opcode::kSendOnlyImm, make("RC Send Only Immediate", sreq | kOnly | kConsumesRecv | kImm, I));
  set(Opcode::kWriteFirst, make("RC RDMA Write First", wreq | kFirst | kRdmaAccess, R));
  set(Opcode::kWriteMiddle, make("RC RDMA Write Middle", wreq | kMiddle, 0));
  set(Opcode::kWriteLast, make("RC RDMA Write Last", wreq | kLast, 0));
  // WRITE with immediate consumes a receive WQE on its last packet (IBA 9.4.3).
  set(Opcode::kWriteLastImm,
      make("RC RDMA Write Last Immediate", wreq | kLast | kImm | kConsumesRecv, I));
  set(Opcode::kWriteOnly, make("RC RDMA Write Only", wreq | kOnly | kRdmaAccess, R));
  set(Opcode::kWriteOnlyImm, make("RC RDMA Write Only Immediate",
                                  wreq | kOnly | kImm | kRdmaAccess | kConsumesRecv, R | I));
  set(Opcode::kReadRequest,
      make("RC RDMA Read Request", kRequest | kRead | kOnly | kRdmaAccess, R));
  set(Opcode::kReadRespFirst, make("RC RDMA Read Response First", rresp | kFirst | kAckOp, A));
  set(Opcode::kReadRespMiddle, make("RC RDMA Read Response Middle", rresp | kMiddle, 0));
  set(Opcode::kReadRespLast, make("RC RDMA Read Response Last", rresp | kLast | kAckOp, A));
  set(Opcode::kReadRespOnly, make("RC RDMA Read Response Only", rresp | kOnly | kAckOp, A));
  set(Opcode::kAck, make("RC Acknowledge", kResponse | kAckOp | kOnly, A));
  set(Opcode::kAtomicAck,
      make("RC Atomic Acknowledge", kResponse | kAckOp | kAtomic | kOnly, A | K));
  set(Opcode::kCompareSwap, make("RC CmpSwap", kRequest | kAtomic | kOnly | kRdmaAccess, X));
  set(Opcode::kFetchAdd, make("RC FetchAdd", kRequest | kAtomic | kOnly | kRdmaAccess, X));
  set(Opcode::kSendLastInv, make("RC Send Last Invalidate", sreq | kLast | kInvalidate, V));
  set(Opcode::kSendOnlyInv,
      make("RC Send Only Invalidate", sreq | kOnly | kConsumesRecv | kInvalidate, V));
  set(Opcode::kUdSendOnly, make("UD Send Only", sreq | kOnly | kConsumesRecv | kUd, D));
  set(Opcode::kUdSendOnlyImm,
      make("UD Send Only Immediate", sreq | kOnly | kConsumesRecv | kImm | kUd, D | I));
  set(Opcode::kCnp, make("CNP", kCnp, C));
  set(Opcode::kSack, make("dpdat SACK", kSack | kPayload, 0));
  return t;
}
}  // namespace detail

inline constexpr std::array<OpInfo, 256> kOpTable = detail::build_table();

constexpr const OpInfo& op_info(Opcode o) { return kOpTable[static_cast<uint8_t>(o)]; }
constexpr const OpInfo& op_info(uint8_t raw) { return kOpTable[raw]; }

// Every defined RC opcode, in numeric order (for tests, tools and tracing).
inline constexpr std::array<Opcode, 23> kAllRcOpcodes = {
    Opcode::kSendFirst,    Opcode::kSendMiddle,    Opcode::kSendLast,       Opcode::kSendLastImm,
    Opcode::kSendOnly,     Opcode::kSendOnlyImm,   Opcode::kWriteFirst,     Opcode::kWriteMiddle,
    Opcode::kWriteLast,    Opcode::kWriteLastImm,  Opcode::kWriteOnly,      Opcode::kWriteOnlyImm,
    Opcode::kReadRequest,  Opcode::kReadRespFirst, Opcode::kReadRespMiddle, Opcode::kReadRespLast,
    Opcode::kReadRespOnly, Opcode::kAck,           Opcode::kAtomicAck,      Opcode::kCompareSwap,
    Opcode::kFetchAdd,     Opcode::kSendLastInv,   Opcode::kSendOnlyInv};

// The UD opcodes the table defines.
inline constexpr std::array<Opcode, 2> kAllUdOpcodes = {Opcode::kUdSendOnly,
                                                        Opcode::kUdSendOnlyImm};

// The congestion notification packet.
inline constexpr std::array<Opcode, 1> kAllCnpOpcodes = {Opcode::kCnp};

// The manufacturer-specific opcodes dpdat defines.
inline constexpr std::array<Opcode, 1> kAllVendorOpcodes = {Opcode::kSack};

// Every opcode the table defines: the RC ones, then the UD ones, then the
// CNP, then the vendor ones.
inline constexpr size_t kOpcodeCount =
    kAllRcOpcodes.size() + kAllUdOpcodes.size() + kAllCnpOpcodes.size() + kAllVendorOpcodes.size();
inline constexpr std::array<Opcode, kOpcodeCount> kAllOpcodes = [] {
  std::array<Opcode, kOpcodeCount> a{};
  size_t i = 0;
  for (Opcode o : kAllRcOpcodes) a[i++] = o;
  for (Opcode o : kAllUdOpcodes) a[i++] = o;
  for (Opcode o : kAllCnpOpcodes) a[i++] = o;
  for (Opcode o : kAllVendorOpcodes) a[i++] = o;
  return a;
}();

// Spot checks against IBA figure 56 / rxe's rxe_opcode table.
static_assert(op_info(Opcode::kWriteOnlyImm).hdr_len == 12 + 16 + 4);
static_assert(op_info(Opcode::kWriteOnlyImm).off(Ext::kImmDt) == 28);
static_assert(op_info(Opcode::kAtomicAck).hdr_len == 12 + 4 + 8);
static_assert(op_info(Opcode::kAtomicAck).off(Ext::kAtomicAckEth) == 16);
static_assert(op_info(Opcode::kCompareSwap).hdr_len == 40);
static_assert(op_info(Opcode::kSendOnly).hdr_len == 12);
static_assert(op_info(Opcode::kReadRespMiddle).hdr_len == 12);
static_assert(!op_info(uint8_t{0x15}).valid && !op_info(uint8_t{0x18}).valid);
static_assert(op_info(Opcode::kUdSendOnly).hdr_len == 12 + 8);
static_assert(op_info(Opcode::kUdSendOnly).off(Ext::kDeth) == 12);
static_assert(op_info(Opcode::kUdSendOnly).is(op::kUd) && !op_info(Opcode::kSendOnly).is(op::kUd));
static_assert(op_info(Opcode::kUdSendOnlyImm).hdr_len == 12 + 8 + 4);
static_assert(op_info(Opcode::kUdSendOnlyImm).off(Ext::kImmDt) == 20);
static_assert(!op_info(uint8_t{0x66}).valid && !op_info(uint8_t{0x20}).valid);
static_assert(op_info(Opcode::kCnp).hdr_len == 12 + 16);
static_assert(!op_info(Opcode::kCnp).is(op::kRequest) && !op_info(Opcode::kCnp).is(op::kResponse));
static_assert(!op_info(uint8_t{0x80}).valid && !op_info(uint8_t{0x82}).valid);
static_assert(op_info(Opcode::kSack).hdr_len == 12 && op_info(Opcode::kSack).is(op::kPayload));
static_assert(!op_info(uint8_t{0xBF}).valid && !op_info(uint8_t{0xC1}).valid);

// Valid path MTUs (IBA 9.7.7 / RoCE): 256 .. 4096.
constexpr bool is_valid_pmtu(uint32_t pmtu) {
  return pmtu == 256 || pmtu == 512 || pmtu == 1024 || pmtu == 2048 || pmtu == 4096;
}

}  // namespace dpdat::wire
