#pragma once
// A soak's churned connections: beside the measured EPs, connections that
// are opened, carry one verified transfer and are closed and freed, in a
// loop, on the same IA.  Each side steps its state machines without
// blocking, from the loops that already drive the interface.

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dat_side.hpp"
#include "runs.hpp"

namespace dpdat::perf {

// Active side: connection j connects, WRITEs Layout::kChurnBytes of a
// pattern new each cycle from churn_src(j) into the peer's churn_src(j),
// READs them back into churn_back(j), compares, disconnects gracefully and
// frees its EP and EVDs.  A stage that takes more than 60 s (a connect's
// timeout too), an event other
// than the expected one, or a mismatch is an error.
class ClientChurn {
 public:
  ClientChurn(Side& s, const Layout& L, const sockaddr_in& peer, uint32_t conn_qual,
              const DAT_RMR_TRIPLET& peer_region);
  ~ClientChurn();
  ClientChurn(const ClientChurn&) = delete;
  ClientChurn& operator=(const ClientChurn&) = delete;

  // Advances every connection.  False with *err on an error.
  bool step(std::string* err);
  // Stops opening connections; true once every connection is closed.
  void stop() { stopping_ = true; }
  bool idle() const;
  uint64_t cycles() const { return cycles_; }

 private:
  enum class St { kIdle, kConnecting, kMoving, kClosing };
  struct Slot {
    Conn c;
    St st = St::kIdle;
    uint64_t since_ns = 0;
    uint8_t salt = 0;
  };
  bool step_one(size_t j, Slot& sl, std::string* err);
  bool advance(size_t j, Slot& sl, std::string* err);  // step_one's state machine
  Side& s_;
  Layout L_;
  sockaddr_in peer_;
  uint32_t qual_;
  DAT_RMR_TRIPLET region_;
  std::vector<Slot> slots_;
  uint64_t cycles_ = 0;
  bool stopping_ = false;
};

// Passive side: every connection request that arrives on the PSP after the
// measured EPs are connected is accepted on a fresh EP, which is freed when
// the peer disconnects.
class ServerChurn {
 public:
  explicit ServerChurn(Side& s) : s_(s) {}
  ~ServerChurn();
  ServerChurn(const ServerChurn&) = delete;
  ServerChurn& operator=(const ServerChurn&) = delete;

  bool step(std::string* err);
  uint64_t accepted() const { return accepted_; }
  uint64_t closed() const { return closed_; }

 private:
  static constexpr size_t kMaxOpen = 64;
  Side& s_;
  std::vector<Conn> open_;
  uint64_t accepted_ = 0, closed_ = 0;
};

}  // namespace dpdat::perf
