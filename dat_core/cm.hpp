// Connection manager: IB CM messages (REQ/REP/RTU/REJ/DREQ/DREP) carried in
// RoCEv2 UD packets to QP 1 (see wire/cm.hpp for the frame format), driving
// the DAT endpoint state machine and its connection events.
//
// Path MTU: the REQ names the active side's; the passive side takes the
// smaller of that and its own and names it in the REP (see wire/cm.hpp).
//
// Active side:   connect -> ARP resolve -> REQ (retransmitted) -> REP ->
//                QP to RTS, RTU -> CONNECTED + ESTABLISHED
// Passive side:  REQ -> CR + CONNECTION_REQUEST event -> accept -> QP to
//                RTS, REP (retransmitted) -> RTU -> CONNECTED + ESTABLISHED
// CM-only EP (verbs' rdma_cm with the application's own queue pair, which
// the application moves by attributes): as above, but no queue pair is
// connected; the active side's REP gives kConnResponse and the RTU waits
// for ep_establish.
// Disconnect:    DREQ (retransmitted) -> DREP; either side -> DISCONNECTED
// Duplicates are recognised by communication IDs: a repeated REQ gets the
// same REP / REJ again, a repeated REP the same RTU.
//
// The CM's code: cm_ops.cpp (what consumers start: connect, accept, reject,
// disconnect, and the messages they send), cm_rx.cpp (messages received),
// cm_timers.cpp (retransmissions, resolution, housekeeping).  This header
// holds what they share.

#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core.hpp"

namespace dpdat::dat::cm {

inline constexpr uint64_t kArpRetryNs = 10'000'000;      // ARP request every 10 ms
inline constexpr uint64_t kArpGiveUpNs = 1'000'000'000;  // unreachable after 1 s
inline constexpr uint64_t kCmRetxNs = 50'000'000;        // first CM retransmission
inline constexpr uint64_t kCmRetxMaxNs = 1'000'000'000;  // back-off cap
inline constexpr uint32_t kCmMaxRetries = 15;            // IBA max CM retries
inline constexpr uint32_t kDreqRetries = 3;
inline constexpr uint64_t kPassiveRecordNs = 10'000'000'000;  // remember passive peers 10 s
// A freed connection's comm IDs are remembered this long (longer than a
// peer repeats its DREQ: kDreqRetries times, backing off to kCmRetxMaxNs).
inline constexpr uint64_t kClosedRecordNs = 10'000'000'000;
inline constexpr uint64_t kHousekeepingNs = 1'000'000;
inline constexpr uint64_t kLinkPollNs = 100'000'000;  // the link's state (link_watchers)
inline constexpr uint64_t kDrainPollNs = 20'000;  // graceful disconnect: re-check the send queue
// Longest a graceful disconnect waits for outstanding requests: a SEND to a
// peer that never posts a receive is RNR-retried without end, so the drain
// gives up, sends the DREQ and the rest is flushed.
inline constexpr uint64_t kDrainMaxNs = 2'000'000'000;

// The path MTU of a connection: the smaller of ours and the one the peer's
// REQ (passive side) or REP (active side) names; a REP that names none
// (0, a peer that does not negotiate) leaves ours.
inline uint32_t agreed_pmtu(uint32_t ours, uint8_t theirs_enum) {
  const uint32_t theirs = wire::cm_mtu_bytes(theirs_enum);
  return theirs == 0 ? ours : std::min(ours, theirs);
}

inline uint64_t guid_of(const wire::MacAddr& m) {  // EUI-64 from the MAC
  return (uint64_t{static_cast<uint8_t>(m[0] ^ 0x02)} << 56) | (uint64_t{m[1]} << 48) |
         (uint64_t{m[2]} << 40) | (uint64_t{0xFF} << 32) | (uint64_t{0xFE} << 24) |
         (uint64_t{m[3]} << 16) | (uint64_t{m[4]} << 8) | m[5];
}

// The queue pair number an EP's REQ / REP names: its own queue pair's, or
// the application's for a CM-only EP.
inline uint32_t cm_qpn_of(const Ep& ep) {
  return ep.cm_qpn != 0 ? ep.cm_qpn : rc::qp::number(*ep.qp);
}

inline void set_pdata(wire::CmMessage& m, const uint8_t* p, uint32_t len) {
  m.pdata_len = static_cast<uint8_t>(len);
  m.pdata.fill(0);
  if (len > 0) std::memcpy(m.pdata.data(), p, len);
}

}  // namespace dpdat::dat::cm
