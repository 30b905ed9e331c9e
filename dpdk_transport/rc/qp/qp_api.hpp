#pragma once
// A queue pair as the layers above the reliable connection see it: its
// number, state and configuration, posting, how full its queues are, its
// counters, and the calls that connect it or end it.  The protocol's own
// state (rc/qp/qp.hpp) is for rc/ and the protocol's tests only; an Engine
// (rc/engine/engine.hpp) hands out queue pairs as pointers to the opaque Qp.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "rc/qp/qp_counters.hpp"
#include "rc/types.hpp"
#include "wire/psn.hpp"

namespace dpdat::rc {

class Qp;
class Srq;

enum class PostResult : uint8_t { kOk, kQueueFull, kInvalidState, kInvalidWr };

namespace qp {

uint32_t number(const Qp& q);
QpState state(const Qp& q);
QpError error(const Qp& q);
const QpConfig& config(const Qp& q);
const QpCounters& counters(const Qp& q);
size_t send_queue_used(const Qp& q);
size_t recv_queue_used(const Qp& q);

// Posting (on the thread that drives the queue pair's engine).
PostResult post_send(Qp& q, const SendWr& wr);
// kInvalidState with an SRQ attached.
PostResult post_recv(Qp& q, const RecvWr& wr);

// Connecting; see Qp::set_pmtu, Qp::set_remote_access, Qp::set_rma_counters,
// Qp::connect, Qp::set_requester.
bool set_pmtu(Qp& q, uint32_t pmtu);
void set_remote_access(Qp& q, uint32_t privs);
void set_rma_counters(Qp& q, std::atomic<uint64_t>* writes, std::atomic<uint64_t>* reads);
bool connect(Qp& q, const PathInfo& path, wire::Psn sq_psn, wire::Psn rq_psn);
bool set_requester(Qp& q, wire::Psn sq_psn, uint32_t retry_count, uint32_t rnr_retry,
                   uint64_t timeout_ns);

// Receives from `srq` instead of its own queue (before connect()).
bool attach_srq(Qp& q, Srq* srq);
// Most receives held from the SRQ at once since the last call.
uint32_t take_srq_peak(Qp& q);
// Moves the posted receives out, oldest first, without completing them
// (a queue pair in RESET or INIT replaced by one on another engine).
void take_recvs(Qp& q, std::vector<RecvWr>* out);

// Acknowledges everything received once more (a connection about to close).
void ack_received(Qp& q, uint64_t now);
// Moves the queue pair to error: outstanding work requests complete as flushed.
void set_error(Qp& q, QpError why, uint64_t now);

}  // namespace qp
}  // namespace dpdat::rc
