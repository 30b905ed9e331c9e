#pragma once
// Work requests, completions and queue-pair configuration: the vocabulary
// between the RC engine and the layer above it (dat_core).
// Memory words are IBA's: an Sge names a memory region (MR) by its lkey, a
// bind names a memory window (MW).  dat_core maps DAT's LMR and RMR and
// their lmr_context / rmr_context (DAT words) onto them.

#include <cstdint>
#include <string_view>
#include <vector>

#include "rc/cc/congestion_config.hpp"
#include "rc/util/spsc_ring.hpp"
#include "wire/headers.hpp"
#include "wire/psn.hpp"

namespace dpdat::rc {

inline constexpr uint32_t kMaxSge = 8;

// A piece of local registered memory: lkey + address + length.
struct Sge {
  uint32_t lkey = 0;
  uint64_t va = 0;
  uint64_t length = 0;
};

enum class WrOp : uint8_t {
  kSend,
  kSendImm,
  kWrite,
  kWriteImm,
  kRead,
  kCompareSwap,  // 8 bytes at remote_va: if == compare, := swap_add; old value -> sge[0]
  kFetchAdd,     // 8 bytes at remote_va += swap_add; old value -> sge[0]
  kBind,         // MW bind (local operation, fenced)
};

namespace wr_flag {
inline constexpr uint32_t kSignaled = 1u << 0;   // report a successful completion
inline constexpr uint32_t kFence = 1u << 1;      // barrier: wait for earlier READs/atomics
inline constexpr uint32_t kSolicited = 1u << 2;  // SE bit on the last packet of a SEND
}  // namespace wr_flag

struct SendWr {
  uint64_t cookie = 0;
  WrOp op = WrOp::kSend;
  uint32_t flags = wr_flag::kSignaled;
  Sge sge[kMaxSge] = {};
  uint32_t num_sge = 0;
  uint64_t remote_va = 0;  // WRITE / READ / atomics
  uint32_t rkey = 0;
  uint32_t imm = 0;
  uint64_t compare = 0;
  uint64_t swap_add = 0;
  // kBind: bind MW `mw_handle` to [bind_va, bind_va + bind_len) of MR
  // `bind_lkey` with remote privileges `bind_privileges` (length 0 unbinds).
  uint32_t mw_handle = 0;
  uint32_t bind_lkey = 0;
  uint64_t bind_va = 0;
  uint64_t bind_len = 0;
  uint32_t bind_privileges = 0;
};

struct RecvWr {
  uint64_t cookie = 0;
  Sge sge[kMaxSge] = {};
  uint32_t num_sge = 0;
  // Not 0: a multi-receive WQE (at most 4 GiB).  It takes incoming SENDs
  // back to back, each where the one before ended, and retires with the
  // message that leaves less than multi_min bytes free.  Only the in-order
  // path places into it.
  uint64_t multi_min = 0;
};

enum class WcStatus : uint8_t {
  kSuccess,
  kLocalLengthError,        // receive buffer too small / bad local lengths
  kLocalProtectionError,    // local MR check failed (key, PZ, privilege, bounds)
  kLocalQpOperationError,   // malformed WR
  kBindError,               // check_bind refused the bind
  kRemoteAccessError,       // peer NAK: remote access error
  kRemoteInvalidRequest,    // peer NAK: invalid request (e.g. its receive too small)
  kRemoteOperationalError,  // peer NAK: remote operational error
  kRetryExceeded,           // transport retry budget exhausted (peer gone)
  kRnrRetryExceeded,        // receiver-not-ready retry budget exhausted
  kFlushed,                 // queue pair went to error before this WR finished
  kCount
};
std::string_view wc_status_name(WcStatus s) noexcept;

enum class WcOp : uint8_t {
  kSend,
  kWrite,
  kRead,
  kCompareSwap,
  kFetchAdd,
  kBind,
  kRecv,
  kRecvWriteImm
};

// The completion opcode of a send-queue work request.
inline WcOp wc_op_of(WrOp op) {
  switch (op) {
    case WrOp::kSend:
    case WrOp::kSendImm:
      return WcOp::kSend;
    case WrOp::kWrite:
    case WrOp::kWriteImm:
      return WcOp::kWrite;
    case WrOp::kRead:
      return WcOp::kRead;
    case WrOp::kCompareSwap:
      return WcOp::kCompareSwap;
    case WrOp::kFetchAdd:
      return WcOp::kFetchAdd;
    case WrOp::kBind:
      return WcOp::kBind;
  }
  return WcOp::kSend;
}

struct Completion {
  uint64_t cookie = 0;
  uint32_t qpn = 0;
  uint32_t byte_len = 0;
  uint32_t imm = 0;
  union {
    uint32_t rkey = 0;  // kBind: the MW's new rkey
    uint32_t offset;    // a receive of a multi-receive WQE: where in it the message begins
    uint32_t src_qp;    // a UD receive: the sender's QPN (its DETH)
  };
  WcOp op = WcOp::kSend;
  WcStatus status = WcStatus::kSuccess;
  bool has_imm = false;
  bool solicited = false;
  // A receive of a multi-receive WQE (`offset` holds its place), and
  // whether the WQE retired with it.
  bool multi = false;
  bool released = false;
  // A UD receive: the buffer begins with the 40 bytes of the GRH (RoCEv2
  // over IPv4: 20 bytes of zeros, then the datagram's IPv4 header), which
  // byte_len counts.
  bool grh = false;
};
// Two to a cache line in the completion rings.
static_assert(sizeof(Completion) == 32);

// Completions from the engine to one consumer: a lock-free SPSC ring, so the
// engine may run on its own lcore while the consumer polls from its thread.
// When full the queue pair stalls its completions (none is lost).
// A consumer with many queues may watch() them: a queue then puts itself on
// the consumer's ready list on the push that finds it unlisted, so the
// consumer visits only queues with entries, not every queue (O(active work)
// with thousands of idle connections).  The list is used by the thread that
// pushes (the engine's), which must also be the one that takes it; the
// consumer reserves room for every watched queue, so listing never allocates.
class CompletionQueue : public SpscRing<Completion> {
 public:
  using SpscRing<Completion>::SpscRing;
  void watch(std::vector<CompletionQueue*>* ready, void* owner) {
    ready_ = ready;
    owner_ = owner;
    listed_ = false;
    if (!empty()) relist();
  }
  void* owner() const { return owner_; }
  bool push(const Completion& c) {
    if (!SpscRing<Completion>::push(c)) return false;
    relist();
    return true;
  }
  // The consumer took it off its ready list.
  void unlisted() { listed_ = false; }
  void relist() {
    if (ready_ != nullptr && !listed_) {
      listed_ = true;
      ready_->push_back(this);
    }
  }

 private:
  std::vector<CompletionQueue*>* ready_ = nullptr;
  void* owner_ = nullptr;
  bool listed_ = false;
};

// An RNR retry count of 7 means "retry forever" (IBA 9.7.5.2.8, the verbs
// rnr_retry semantics DAT providers default to): a sender waits for the
// receiver to post, paced by rnr_delay_ns, never failing with RNR exceeded.
inline constexpr uint32_t kRnrRetryInfinite = 7;

struct QpConfig {
  uint32_t sq_depth = 256;
  uint32_t rq_depth = 256;
  uint32_t pmtu = 1024;
  uint32_t window = 128;        // max unacknowledged request packets in flight
  uint32_t ack_every = 16;      // requester sets AckReq every N packets; responder ACKs by then
  uint32_t max_rd_atomic = 16;  // outstanding RDMA READ / atomic requests
  // The retransmission timeout before the first RTT sample, and its cap;
  // doubled per consecutive timeout, up to 64x.
  uint64_t retransmit_timeout_ns = 1'000'000;
  // Adaptive retransmission timeout: from RTTs measured on acknowledged
  // AckReq packets (never on retransmitted ones), RTO = SRTT + 4 RTTVAR as
  // TCP computes it (RFC 6298), within [rto_min_ns, retransmit_timeout_ns].
  // false: retransmit_timeout_ns always.
  bool adaptive_rto = true;
  uint64_t rto_min_ns = 50'000;
  // Tail-loss probe: when no ACK came for max(2 SRTT, tlp_min_ns) after the
  // last packet sent, that packet is sent once more with AckReq, so a lost
  // tail is reported by the responder (ACK or sequence NAK) instead of
  // waiting for the timeout.  Needs an RTT sample.
  bool tail_loss_probe = true;
  uint64_t tlp_min_ns = 20'000;
  // Transport retries before the QP breaks; and never before the time the
  // fixed schedule (retransmit_timeout_ns backed off over retry_count
  // timeouts) takes, however short the adaptive timeout is.
  uint32_t retry_count = 7;
  // ... and not before this long since the first of those timeouts: a peer
  // whose host stalls (no CPU for a while, as on a loaded 2-CPU machine)
  // is not taken for dead after the ~190 ms the 7 backed-off retries take.
  // Further timeouts keep the 64x interval.  0: the count alone decides.
  uint64_t min_retry_time_ns = 0;
  uint64_t rnr_delay_ns = 100'000;
  uint32_t rnr_retry = 7;          // kRnrRetryInfinite (7): retry for as long as the peer says RNR
  uint64_t ack_delay_ns = 10'000;  // max time an ACK is held for coalescing
  uint32_t replay_depth = 16;      // READ / atomic replay cache entries
  uint32_t read_resp_budget = 32;  // READ response packets per progress call
  // Selective repeat: RDMA WRITEs without immediate data go out as one
  // self-describing RDMA WRITE Only packet (own RETH) per PMTU, so the
  // responder places them on arrival in any order.  The responder also
  // places SEND and WRITE-with-immediate packets after a hole by their PSN
  // offset (the message in progress and up to 8 after it; a SEND whose first
  // packet was lost too; never a SEND packet a message boundary may precede),
  // and follows each sequence-error NAK with a selective acknowledgement
  // (dpdat's vendor opcode 0xC0, which an IBA requester drops), so the
  // requester resends every hole at once; READ responses after a gap are
  // placed by offset and each gap is asked for again by range.  A packet
  // after a hole that cannot be placed (a SEND packet a message boundary may
  // precede, a READ or atomic request, ...) is kept whole and taken in order
  // (responder_hold.cpp), so with a peer that sends SACKs every hole is
  // resent alone; without SACKs, atomics, a lost first packet of a
  // WRITE-imm and what the responder did not keep go back N.  false:
  // go-back-N for everything, no SACK (strict IBA requesters and
  // responders).
  bool selective_repeat = true;
  // Request packets and READ responses carry ECT(0) in the IPv4 ECN field
  // (RoCEv2 over ECN-marking switches); ACKs do not.
  bool ecn_capable = true;
  // Congestion control (congestion_control.hpp): DCQCN on CNPs, a delay
  // window on measured round trips, per-QP pacing.
  CcConfig cc;
};

// Addresses of both ends of a connection (Ethernet/IPv4/UDP, peer's QPN).
struct PathInfo {
  wire::MacAddr local_mac{};
  wire::MacAddr peer_mac{};
  uint32_t local_ip = 0;
  uint32_t peer_ip = 0;
  uint16_t udp_src_port = 0xC000;
  uint32_t peer_qpn = 0;
};

enum class QpState : uint8_t { kReset, kRts, kError };

// The timers of a queue pair, which its engine keeps (kPace: the pacer's next
// send time, congestion control).
enum class QpTimer : uint8_t { kRetransmit, kRnr, kAck, kProbe, kPace, kCount };

enum class QpError : uint8_t {
  kNone,
  kRetryExceeded,
  kRnrRetryExceeded,
  kRemoteAccess,
  kRemoteInvalidRequest,
  kRemoteOperational,
  kLocalProtection,
  kLocalLength,
  kProtocol,
  kDestroyed
};
std::string_view qp_error_name(QpError e) noexcept;

}  // namespace dpdat::rc
