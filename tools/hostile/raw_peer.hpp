#pragma once
// A raw RoCEv2 endpoint for dpdat-hostile: frames built with dpdat's own
// wire builder (valid ICRC, so they reach the victim's state machines) and
// sent on a DPDK port, the CM handshake done by hand (REQ, REP, RTU), and
// the victim's answers read back.  No queue pair state machine: the peer
// sends exactly the frames an attack asks for.

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "dpdk/port.hpp"
#include "wire/cm.hpp"
#include "wire/packet.hpp"

namespace dpdat::hostile {

// A connection to the victim made by the handshake, and what its REP's
// private data named: the region the victim granted this connection.
struct Conn {
  uint32_t my_qpn = 0, victim_qpn = 0;
  uint32_t my_comm = 0, victim_comm = 0;
  uint32_t next_psn = 0;  // the PSN the victim expects next from us
  uint32_t pmtu = 1024;
  uint64_t va = 0;  // granted region
  uint32_t rkey = 0, len = 0;
};

// What the victim answered a request with.
struct Answer {
  enum Kind : uint8_t { kNone, kAck, kNak, kRnr, kReadData, kAtomicAck } kind = kNone;
  uint8_t nak_code = 0;  // with kNak: AETH NAK code (wire::aeth::kNak*)
  uint32_t psn = 0;
};

class RawPeer {
 public:
  RawPeer(dpdk::Port& port, uint32_t my_ip, uint32_t victim_ip, uint64_t service, uint64_t seed);

  // The victim's MAC by ARP within timeout_ms.
  bool resolve(int timeout_ms);

  // Sends one RC frame built from `s` (addresses filled in unless set:
  // spoofed sources keep theirs).  False when the builder refused it or the
  // port took nothing.
  bool send(wire::BuildSpec s, uint32_t pmtu = 4096);
  bool send_cm(const wire::CmMessage& m, uint32_t src_ip = 0);
  // A MAD that is not a valid CM message (bad class version).
  bool send_bad_mad();

  // REQ, wait for REP (or REJ), RTU.  False on REJ or timeout.
  bool connect(Conn* c, int timeout_ms, std::string* why);
  // A REQ that is never followed up (no RTU): a connection-request flood.
  void send_req(uint64_t service, uint32_t* my_comm);
  // DREQ for `c` (from `src_ip`, 0: ours), answered DREP or not.
  void send_dreq(const Conn& c, uint32_t src_ip = 0, uint32_t victim_comm = 0);

  // Waits for the victim's answer on `c` (ACK, NAK, READ data, atomic ACK).
  Answer await(const Conn& c, int timeout_ms);
  // Reads and drops whatever arrived (answers to floods, DREPs, REJs).
  void drain(int ms);

  uint32_t victim_ip() const { return victim_ip_; }
  uint32_t my_ip() const { return my_ip_; }
  std::mt19937_64& rng() { return rng_; }

 private:
  uint32_t rx(std::vector<std::vector<uint8_t>>* frames, int timeout_ms);
  dpdk::Port& port_;
  uint32_t my_ip_, victim_ip_;
  uint64_t service_;
  wire::MacAddr victim_mac_{};
  std::mt19937_64 rng_;
  std::vector<std::vector<uint8_t>> backlog_;  // received, not yet matched
};

uint64_t now_ns();

}  // namespace dpdat::hostile
