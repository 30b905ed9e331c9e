#pragma once
// One reliable-connection queue pair, split along the roles of IBA chapter 9
// (as Linux rxe splits rxe_req.c / rxe_resp.c / rxe_comp.c):
//   requester.cpp   segmentation, PSNs, window, fences, retransmission
//   responder.cpp   PSN / opcode-sequence / length / resource / key checks,
//                   placement, RNR, coalesced ACKs
//   responder_replay.cpp  READ responses and atomic ACKs in PSN order, the
//                   replay cache for duplicate READ / atomic requests
//   responder_sr.cpp  selective repeat: packets after a hole placed by offset,
//                   taken in order once the hole is filled
//   responder_hold.cpp  selective repeat: request frames after a hole kept
//                   whole, run through the responder when their turn comes
//   completer.cpp   every response (ACK, NAK, READ response, atomic ACK,
//                   SACK), in-order completions
//   qp_post.cpp     posting of work requests
//   qp_congestion.cpp  the queue pair's side of congestion control
//   qp.cpp          construction, dispatch, progress, timers, error state
//   qp_states.*     the roles' states and names, the trace hook
// Each role keeps its state in a struct of its own (req_, resp_, comp_, and
// srs_ / srr_ for the two sides of selective repeat) and walks an explicit
// state (ReqState, RespState, CompState) through small check_* steps that
// validate and return the next state (they change no protocol state; they
// may count what they see), and steps that act.  The responder's error
// states map to NAK codes in kRespError, the NAK codes a completer receives
// to completion statuses in kNakOutcome.  Owned and driven by exactly one
// Engine; never touched by another thread.  The layers above see a queue
// pair through qp_api.hpp only.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "rc/cc/congestion.hpp"
#include "rc/cc/congestion_control.hpp"
#include "rc/mr_table.hpp"
#include "rc/qp/qp_api.hpp"
#include "rc/qp/qp_counters.hpp"
#include "rc/qp/qp_ring.hpp"
#include "rc/qp/qp_states.hpp"
#include "rc/srq.hpp"
#include "rc/types.hpp"
#include "rc/util/psn_bitmap.hpp"
#include "wire/packet.hpp"

namespace dpdat::rc {

class Engine;

class Qp {
 public:
  using TimerKind = QpTimer;

  // The roles' states (qp_states.hpp): each role walks its own through
  // small check_* steps that return the next state.
  enum class ReqState : uint8_t { DPDAT_RC_REQ_STATES(DPDAT_RC_STATE_ENUM) kCount };
  enum class RespState : uint8_t { DPDAT_RC_RESP_STATES(DPDAT_RC_STATE_ENUM) kCount };
  static constexpr RespState kRespErrFirst = RespState::kErrLength;
  enum class CompState : uint8_t { DPDAT_RC_COMP_STATES(DPDAT_RC_STATE_ENUM) kCount };
  static std::string_view state_name(ReqState s) noexcept;
  static std::string_view state_name(RespState s) noexcept;
  static std::string_view state_name(CompState s) noexcept;

  Qp(Engine& engine, MrTable& mr, uint32_t qpn, uint32_t pz, const QpConfig& cfg,
     CompletionQueue* send_cq, CompletionQueue* recv_cq);
  ~Qp();
  Qp(const Qp&) = delete;
  Qp& operator=(const Qp&) = delete;

  uint32_t qpn() const { return qpn_; }
  uint32_t pz() const { return pz_; }
  QpState state() const { return state_; }
  QpError error() const { return error_; }
  const QpConfig& config() const { return cfg_; }
  const QpCounters& counters() const { return ctr_; }
  // Round-trip estimate and the current (un-backed-off) retransmission timeout.
  const RttEstimator& rtt() const { return rtt_; }
  // Congestion control state: current paced rate, delay window, DCQCN state.
  const CongestionControl& cc() const { return cc_; }

  // The path MTU the connection agreed on (the CM's choice, at most the one
  // the QP was created with).  Only in kReset; false for any other state or a
  // size that is not an IBA MTU.
  bool set_pmtu(uint32_t pmtu);
  // The remote operations the responder takes (priv::kRemoteRead,
  // kRemoteWrite, kRemoteAtomic; all by default): verbs' qp_access_flags.
  // One outside it is refused as a bad key would be (NAK remote access
  // error), whatever the memory region allows.
  void set_remote_access(uint32_t privs) { remote_access_ = privs; }
  uint32_t remote_access() const { return remote_access_; }
  // Counters of the remote accesses this responder serves (libfabric's
  // FI_RMA_EVENT counters): each RDMA WRITE (with or without immediate)
  // adds one to *writes, each RDMA READ one to *reads, exactly once, when
  // the expected PSN passes it: a WRITE placed ahead of a hole when the
  // hole fills, a duplicate or repeated request not again.  nullptr: not
  // counted.  The counters outlive the queue pair or are unset first.
  // A region's own counters (MrTable::mr_set_rma_counters) count the same
  // way, but a self-describing WRITE Only placed ahead of a hole counts on
  // its region's when it is placed.
  void set_rma_counters(std::atomic<uint64_t>* writes, std::atomic<uint64_t>* reads) {
    rma_writes_ = writes;
    rma_reads_ = reads;
  }
  // Reset -> RTS.  sq_psn: first PSN we send; rq_psn: first PSN we expect.
  bool connect(const PathInfo& path, wire::Psn sq_psn, wire::Psn rq_psn);
  // A queue pair connected by attributes exchanged out of band (verbs: RTR,
  // then RTS) learns its first send PSN and its requester's retry budgets
  // after connect(): only while it has sent nothing and holds no request.
  // timeout_ns 0 keeps the configured retransmission timeout and
  // min_retry_time_ns; a timeout given replaces both: the peer is dead once
  // the fixed schedule of retry_count timeouts of timeout_ns (backed off)
  // has passed, however short.
  bool set_requester(wire::Psn sq_psn, uint32_t retry_count, uint32_t rnr_retry,
                     uint64_t timeout_ns);

  // Posting (same thread as the engine).
  using PostResult = rc::PostResult;
  PostResult post_send(const SendWr& wr);
  PostResult post_recv(const RecvWr& wr);  // kInvalidState with an SRQ attached
  // Takes receives from `srq` instead of its own queue (before connect(); the
  // SRQ outlives the QP).
  bool attach_srq(Srq* srq);
  Srq* srq() const { return srq_; }
  // Most receives this QP held from its SRQ at once since the last call
  // (in progress: taken, not yet completed); for the SRQ high watermarks.
  uint32_t take_srq_peak() {
    const uint32_t p = srq_peak_;
    srq_peak_ = static_cast<uint32_t>(rq_tail_ - rq_head_);
    return p;
  }
  // Moves the posted receives out, oldest first, without completing them (a
  // QP in RESET or INIT being replaced by one on another engine, which gets
  // them posted in the same order).  Not with an SRQ attached.
  void take_recvs(std::vector<RecvWr>* out) {
    for (uint64_t i = rq_head_; i < rq_tail_; ++i) out->push_back(rq(i).wr);
    rq_head_ = rq_tail_;
  }
  // The QP is being destroyed: receives it took from the SRQ are lost.
  void release_srq() {
    if (srq_ != nullptr)
      for (uint64_t i = rq_head_; i < rq_tail_; ++i) srq_->retire();
    rq_head_ = rq_tail_;
  }
  // Reports a work request refused after an asynchronous hand-off (engine
  // thread mode) as a completion with kLocalQpOperationError.  False when
  // the completion queue is full: call again once the consumer made room.
  bool complete_rejected(bool is_send, uint64_t cookie);
  size_t send_queue_used() const { return sq_tail_ - sq_head_; }
  size_t recv_queue_used() const { return rq_tail_ - rq_head_; }

  // Acknowledges, once more, everything received so far (a connection about
  // to be closed: the peer may not have seen the last coalesced or lost ACK,
  // and will flush what it still waits for once the close reaches it).
  void ack_received(uint64_t now);

  // Moves the QP to error: outstanding work requests complete as flushed.
  void set_error(QpError why, uint64_t now);

  // ---- called by the Engine ----
  void on_packet(const wire::PacketView& v, uint64_t now);
  // Emits what the window / budgets allow.  Returns true when more work
  // remains that only needs TX room (keep the QP on the active list).
  bool progress(uint64_t now);
  void on_timer(TimerKind kind, uint64_t now);
  // Called once at the end of an RX burst that touched this QP.
  void end_of_burst(uint64_t now);
  bool has_pending_work() const;
  uint64_t timer_deadline(TimerKind k) const { return timer_[static_cast<size_t>(k)]; }
  bool on_active_list_ = false;
  // Position of this QP's entry in the engine's timer heap per kind
  // (kNoTimerSlot: none); maintained by the Engine, which holds at most one
  // entry per QP and kind.
  static constexpr uint32_t kNoTimerSlot = UINT32_MAX;
  std::array<uint32_t, static_cast<size_t>(TimerKind::kCount)> timer_slot_{
      kNoTimerSlot, kNoTimerSlot, kNoTimerSlot, kNoTimerSlot, kNoTimerSlot};

 private:
  struct SendWqe {
    SendWr wr;
    uint64_t total_len = 0;
    wire::Psn first_psn;
    uint32_t npkts = 0;      // PSNs the WR occupies (READ: response packets)
    uint32_t sent = 0;       // next packet index to (re)send
    uint32_t resp_pkts = 0;  // READ: response packets placed in order
    uint32_t resp_seen = 0;  // READ: index + 1 of the newest response seen (selective repeat)
    bool started = false;    // PSNs assigned, local SGEs checked
    uint64_t rd_seq = 0;     // READ / atomic: running number among those
    bool done = false;
    WcStatus status = WcStatus::kSuccess;
    uint32_t result_rkey = 0;
    std::array<uint8_t*, kMaxSge> host{};
  };
  struct RecvWqe {
    RecvWr wr;
    uint64_t capacity = 0;
    uint64_t used = 0;  // multi-receive: bytes the messages before took
    std::array<uint8_t*, kMaxSge> host{};
  };
  // Responder output that must leave in PSN order (IBA 9.7.5.1.4): READ
  // responses and atomic ACKs queue here; plain ACKs wait until it drains.
  struct RespJob {
    bool is_read = false;
    wire::Psn psn;          // PSN of the next response packet
    uint32_t next_pkt = 0;  // index within the READ
    uint32_t npkts = 1;
    uint64_t len = 0;     // READ: total length
    uint64_t va = 0;      // READ: requested address and key, re-checked
    uint32_t rkey = 0;    // per packet (the region may be freed meanwhile)
    bool replay = false;  // re-executed for a duplicate request
    uint64_t atomic_orig = 0;
    wire::Psn first_psn;  // READ: PSN of the request (job identity)
    // READ: the packets [start_pkt, end_pkt) this job answers; opcodes run
    // FIRST..LAST over that range (a re-request is a READ of its own).
    uint32_t start_pkt = 0;
    uint32_t end_pkt = 1;
  };
  struct ReplayEntry {
    bool valid = false;
    bool is_read = false;
    wire::Psn psn;
    uint32_t npkts = 1;
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint64_t len = 0;
    uint64_t atomic_orig = 0;
  };

  // The rings are a power of two long (a mask, not a division, per access);
  // sq_cap_ / rq_cap_ are the configured depths that posting enforces.  Their
  // storage comes from the engine's pool while they hold entries (qp_ring.hpp).
  SendWqe& sq(uint64_t i) { return sq_[i]; }
  const SendWqe& sq(uint64_t i) const { return sq_[i]; }
  RecvWqe& rq(uint64_t i) { return rq_[i]; }
  // Gives the storage of the empty rings back to the engine's pool.
  void release_idle_rings();

  // requester (requester.cpp)
  bool emit_requests(uint64_t now);
  ReqState req_get_wqe() const;
  ReqState check_fence(const SendWqe& w) const;
  // Request packets in flight if `psn` were sent now: those after una that
  // no SACK showed the responder holds.  The window (cc_window) bounds it;
  // with a peer that sends SACKs it reaches up to kHeldSpan past una, so a
  // hole being repaired does not stop the sender a window after it.
  int32_t in_flight_at(wire::Psn psn) const;
  bool window_room(wire::Psn psn) const {
    return in_flight_at(psn) < static_cast<int32_t>(cc_window());
  }
  void exec_bind(SendWqe& w, uint64_t now);
  ReqState req_emit(SendWqe& w, uint64_t now);
  bool start_wqe(SendWqe& w, uint64_t now);
  bool emit_one(SendWqe& w, uint64_t now);
  // `probe`: a tail-loss probe (AckReq set, not timed).
  // `rd_n`: a READ re-request for `rd_n` responses from `idx` (0: to the end).
  bool emit_packet(const SendWqe& w, uint32_t idx, uint64_t now, bool probe = false,
                   uint32_t rd_n = 0);
  // Resends the packet holding `psn` as a probe (a READ: its request).
  void send_probe(wire::Psn psn, uint64_t now);
  void on_retransmit_timeout(uint64_t now);
  bool sr_timeout_resend(wire::Psn una, uint64_t now);
  uint64_t probe_timeout() const;
  bool sr_packet(const SendWqe& w) const;
  bool emit_sr_resends(uint64_t now);
  size_t gather(const SendWqe& w, uint64_t offset, uint64_t len,
                std::array<std::span<const uint8_t>, kMaxSge>& out) const;
  static void scatter(const std::array<uint8_t*, kMaxSge>& host, const Sge* sge, uint32_t nsge,
                      uint64_t offset, std::span<const uint8_t> data);
  wire::Psn una_psn() const;
  bool has_outstanding() const;
  // The first started, unfinished WQE (binds aside) whose last PSN is at or
  // after `psn`, or sq_tail_: the one holding `psn` when wqe_holds() says so.
  uint64_t wqe_from(wire::Psn psn) const;
  bool wqe_holds(uint64_t i, wire::Psn psn) const {
    return i < sq_tail_ && wire::Psn::diff(psn, sq(i).first_psn) >= 0;
  }
  void rewind_to(wire::Psn psn, uint64_t now);
  void arm_retransmit(uint64_t now);

  // completer (completer.cpp)
  void complete_in_order(uint64_t now);
  void fail_wqe_at(wire::Psn psn, WcStatus st, QpError why, uint64_t now);
  // Per-response context the check_* steps fill in.
  struct CompCtx {
    const wire::PacketView& v;
    wire::Psn psn;
    uint64_t wqe = 0;      // READ / atomic: the send-queue index it answers
    uint32_t idx = 0;      // READ: the response's index within the READ ...
    uint64_t off = 0;      // ... and its offset
    wire::Psn expected{};  // READ: the response the READ expects next
  };
  void on_response(const wire::PacketView& v, uint64_t now);
  CompState check_response_opcode(const wire::PacketView& v) const;
  CompState check_syndrome(uint8_t syndrome) const;
  CompState check_nak_psn(wire::Psn psn, CompState next) const;
  CompState do_rnr_nak(wire::Psn psn, uint64_t now);
  CompState do_seq_nak(wire::Psn psn, uint64_t now);
  bool sr_nak_in_flight(wire::Psn psn, uint64_t now) const;
  void on_sack(const wire::PacketView& v, uint64_t now);
  // Queues `psn` for a single resend (emit_sr_resends), once.
  void sr_queue_resend(wire::Psn psn);
  // Whether `psn` was resent alone within sr_in_flight_ns().
  bool sr_recently_resent(wire::Psn psn, uint64_t now) const;
  CompState check_read_response(CompCtx& c) const;
  void do_read_in_order(const CompCtx& c, uint64_t now);
  CompState do_read_ahead(const CompCtx& c, uint64_t now);
  void do_read_gap(const CompCtx& c, uint64_t now);
  CompState check_atomic_ack(CompCtx& c) const;
  void do_atomic_ack(const CompCtx& c, uint64_t now);
  void note_acked(wire::Psn psn, uint64_t now);
  void finish_rd_atomic(SendWqe& w);
  void after_response(wire::Psn psn, uint64_t now);

  // responder (responder.cpp): per-packet context the check_* steps fill in.
  struct RespCtx {
    const wire::PacketView& v;
    wire::Psn psn;
    bool first = false, last = false, is_send = false, is_write = false;
    uint8_t* host = nullptr;  // rkey check: where the access lands
    uint64_t va = 0, len = 0;
    uint32_t rkey = 0;
    std::atomic<uint64_t>* mr_counter = nullptr;  // READ: its region's (AccessGrant)
  };
  void on_request(const wire::PacketView& v, uint64_t now);
  RespState check_psn(RespCtx& c) const;
  RespState take_in_sequence(const RespCtx& c, uint64_t now);
  void on_out_of_sequence(const RespCtx& c, uint64_t now);
  RespState check_length(const RespCtx& c) const;
  RespState check_op_seq(const RespCtx& c) const;
  RespState check_resources(const RespCtx& c);
  RespState check_keys(RespCtx& c);
  bool remote_ok(AccessError e);  // counts a refusal by reason (EngineCounters::rkey_refused)
  // The R_Key check of an RDMA READ or WRITE request: a zero-length one
  // touches no memory, and its key and address are not validated (as RDMA
  // hardware does; UCX flushes with an empty WRITE whose rkey is 0).
  AccessError check_rdma(uint32_t rkey, uint64_t va, uint64_t len, Access access,
                         AccessGrant* grant) const {
    if (len == 0) {
      grant->host = nullptr;
      return AccessError::kOk;
    }
    return mr_.check_remote(rkey, pz_, va, len, access, grant);
  }
  RespState exec_send(const RespCtx& c);
  RespState exec_write(const RespCtx& c);
  RespState exec_read(const RespCtx& c, uint64_t now);
  RespState exec_atomic(const RespCtx& c, uint64_t now);
  void acknowledge(const RespCtx& c, uint64_t now);
  // An error state: its NAK (kRespError), completion and the QP to error.
  void responder_error(RespState s, wire::Psn psn, uint64_t now);
  void send_rnr_nak(wire::Psn psn, bool cq_full, uint64_t now);
  void send_ack(uint8_t syndrome, wire::Psn psn, uint64_t now);
  void remember(const ReplayEntry& e);
  bool place_out_of_order(const wire::PacketView& v);
  // `ack_req`: the packet just taken in order asked for an answer.
  void advance_epsn(uint64_t now, bool ack_req = false);
  bool sr_bit(wire::Psn p) const { return srm_ != nullptr && srm_->placed.test(p); }
  void sr_set(wire::Psn p, bool on) {
    if (on || srm_ != nullptr) sr_maps().placed.set(p, on);
  }

  // responder output (responder_replay.cpp)
  void handle_duplicate(const wire::PacketView& v, uint64_t now);
  bool respond_emit(uint64_t now);
  // The queue of responses is a fixed ring sized at creation (no allocation
  // per request); a request that finds it full is dropped unacknowledged and
  // the requester repeats it.
  bool resp_empty() const { return resp_.job_head == resp_.job_tail; }
  bool resp_full() const { return resp_.job_tail - resp_.job_head >= resp_.job_cap; }
  RespJob& resp_at(uint64_t i) { return resp_.jobs[i]; }
  // Without memory for the ring the job is dropped like one that finds the
  // ring full (the requester repeats the request).
  void resp_push(const RespJob& j);
  // A re-requested READ range (selective repeat) goes before every queued
  // job that has not sent a packet yet, after the one in progress and the
  // re-requests queued before it (responder_replay.cpp).
  void resp_push_replay(const RespJob& j);

  // shared
  void set_timer(TimerKind k, uint64_t deadline);
  void clear_timer(TimerKind k) { timer_[static_cast<size_t>(k)] = 0; }
  // The spec of the next frame this QP sends (tx_spec_), path fields filled
  // in by connect(), with `op`, `psn` and cleared flags / payload.  Valid
  // until the next call.
  wire::BuildSpec& base_spec(wire::Opcode op, wire::Psn psn);
  bool transmit(const wire::BuildSpec& spec, uint64_t now);
  void flush_recvs();
  // A receive for the message starting now: the own queue's head, or one
  // taken from the SRQ into the own queue.  False: none (RNR).
  bool have_recv();
  // Whether the receive completion queue can take one more completion (the
  // engine is its only producer: room seen here stays until it pushes).
  bool recv_cq_room() const { return recv_cq_ == nullptr || !recv_cq_->full(); }
  // Pushes a receive completion; false (counted) when the queue is full.
  bool push_recv_completion(const Completion& c) {
    if (recv_cq_ == nullptr || recv_cq_->push(c)) return true;
    ctr_.cq_stalls++;
    return false;
  }
  // Fills in where a message of `len` bytes landed in the head receive and
  // consumes it there; true when the head retires with it (every receive
  // but a multi-receive with room left).  retire_recv() follows when the
  // completion was pushed.
  bool take_recv(Completion* wc, uint64_t len);
  // The head receive completed (its completion was pushed).
  void retire_recv() {
    ++rq_head_;
    if (srq_ != nullptr) srq_->retire();
  }

  Engine& engine_;
  MrTable& mr_;
  const uint32_t qpn_;
  const uint32_t pz_;
  QpConfig cfg_;  // only pmtu changes (kReset, set_pmtu) and the retry budgets (set_requester)
  uint32_t remote_access_ = priv::kRemoteRead | priv::kRemoteWrite | priv::kRemoteAtomic;
  std::atomic<uint64_t>* rma_writes_ = nullptr;  // set_rma_counters
  std::atomic<uint64_t>* rma_reads_ = nullptr;
  // A WRITE / READ served (the expected PSN passed it): one more on the
  // counter set for it, if any.
  static void count_rma(std::atomic<uint64_t>* c) {
    if (c != nullptr) c->fetch_add(1, std::memory_order_release);
  }
  CompletionQueue* send_cq_;
  CompletionQueue* recv_cq_;
  Srq* srq_ = nullptr;
  uint32_t srq_peak_ = 0;
  QpState state_ = QpState::kReset;
  QpError error_ = QpError::kNone;
  PathInfo path_;
  wire::BuildSpec tx_spec_;                                    // see base_spec()
  std::array<std::span<const uint8_t>, kMaxSge> tx_pieces_{};  // gather list of tx_spec_
  QpCounters ctr_;
  std::array<uint64_t, static_cast<size_t>(TimerKind::kCount)> timer_{};

  const uint32_t sq_cap_, rq_cap_;

  // The send queue: the requester emits from it, the completer retires from
  // its head.
  PoolRing<SendWqe> sq_;
  uint64_t sq_head_ = 0;  // oldest WR not yet completed
  uint64_t sq_tail_ = 0;  // next free slot
  RttEstimator rtt_;

  // Requester (requester.cpp): where emission stands.
  struct Requester {
    uint64_t emit = 0;          // sq index of the WR the emitter works on
    wire::Psn next_psn;         // PSN of the next WR that has never been started
    wire::Psn max_sent_psn;     // newest request PSN ever sent
    bool tlp_sent = false;      // the probe for the current tail went out
    bool span_stalled = false;  // stopped a kHeldSpan past una (counted once per stop)
    bool rtt_timing = false;    // a sample is running for rtt_psn, sent at rtt_t0
    wire::Psn rtt_psn;
    uint64_t rtt_t0 = 0;
    bool rnr_waiting = false;  // an RNR NAK for rnr_psn stopped emission until the RNR timer
    wire::Psn rnr_psn;
    uint64_t last_bind_end = 0;  // index + 1 of the newest bind WR started (0: none)
    uint32_t since_ack_req = 0;
    bool read_gap_pending = false;  // a READ re-request for read_gap_psn is out
    wire::Psn read_gap_psn;
    uint32_t rd_atomic_outstanding = 0;
    uint64_t rd_seq_next = 0;  // rd_seq of the next READ / atomic started
  };
  Requester req_;
  bool rd_atomic_room() const;

  // Completer (completer.cpp): what was acknowledged, and the retry budgets
  // that NAKs and timeouts spend.
  struct Completer {
    wire::Psn acked_psn;  // every request PSN <= this was acknowledged
    uint32_t retries_left = 0;
    uint32_t rnr_retries_left = 0;
    uint64_t dead_after_ns = 0;     // see QpConfig::retry_count (set_requester changes it)
    uint64_t first_timeout_ns = 0;  // first of the current run of timeouts (0: none)
    uint32_t backoff = 0;           // consecutive retransmission timeouts
    uint64_t nak_retry_ns = 0;      // when a sequence NAK last spent a retry
  };
  Completer comp_;

  // The receive queue: the responder consumes it in order.
  PoolRing<RecvWqe> rq_;
  uint64_t rq_head_ = 0, rq_tail_ = 0;

  // The NAK sent for the current gap, if any: one sequence-error NAK per gap;
  // after an RNR NAK, later packets of the burst are no sequence errors.
  enum class NakSent : uint8_t { kNone, kSeq, kRnr };
  // The NAK that moved this responder to error, repeated to retransmitted
  // requests so the requester learns the reason even when the NAK was lost.
  struct FatalNak {
    uint8_t syndrome = 0;
    wire::Psn psn;
  };
  enum class InMsg : uint8_t { kNone, kSend, kWrite };
  // Responder (responder*.cpp): the expected PSN, the message in progress,
  // the ACK / NAK it owes, and its output queue.
  struct Responder {
    wire::Psn epsn;
    uint32_t msn = 0;
    NakSent nak_sent = NakSent::kNone;
    // How long the requester takes to fill a hole once told (the first
    // sequence NAK for a PSN to its arrival, when that NAK was not repeated),
    // smoothed, and its mean deviation: a NAK repeated sooner than the mean
    // plus two deviations (as a retransmission timer judges a round trip)
    // would mostly find the resend on its way, the repair time varying with
    // the queue in front of it; the responder waits that long before it
    // says the same again.
    uint64_t nak_repair_ns = 0;  // 0: no sample yet
    uint64_t nak_repair_dev_ns = 0;
    uint32_t nak_repeats = 0;  // NAKs repeated for the hole nak_timed_psn
    uint64_t nak_sent_ns = 0;  // the newest sequence NAK
    bool nak_timed = false;    // timing the first NAK for nak_timed_psn
    bool nak_timed_once = false;
    wire::Psn nak_timed_psn;
    uint64_t nak_timed_ns = 0;
    std::optional<FatalNak> fatal_nak;
    InMsg in_msg = InMsg::kNone;
    uint64_t msg_offset = 0;
    uint8_t* write_host = nullptr;
    uint64_t write_len = 0;
    std::atomic<uint64_t>* write_counter = nullptr;  // its region's (AccessGrant)
    bool recv_in_use = false;  // rq(rq_head_) consumed by the message in progress
    uint32_t unacked = 0;
    bool ack_req_seen = false;
    bool ack_owed = false;
    PoolRing<RespJob> jobs;  // ring of at most job_cap (a power of two); see resp_push()
    uint32_t job_cap = 0;
    uint64_t job_head = 0, job_tail = 0;
    std::vector<ReplayEntry> replay;
    uint32_t replay_next = 0;
  };
  Responder resp_;
  // Each repeat for the same hole doubles the wait (a receiver descheduled
  // for a while finds every resend overdue at once).
  bool nak_repeat_due(uint64_t now) const {
    const uint64_t wait = resp_.nak_repair_ns + 2 * resp_.nak_repair_dev_ns;
    return now - resp_.nak_sent_ns >= wait << std::min<uint32_t>(resp_.nak_repeats, 6);
  }

  // Selective repeat: PSNs in (resp_.epsn, resp_.epsn + kSrSpan) already placed.
  using SrBits = PsnBitmap<32>;
  static constexpr int32_t kSrSpan = SrBits::kSpan;
  // The bitmaps below exist only once a QP met a hole (sr_maps()): an idle
  // or lossless QP carries none of their 1 KiB.
  struct SrNext;
  struct SrMaps;
  std::unique_ptr<SrMaps> srm_;
  SrMaps& sr_maps() {
    if (srm_ == nullptr) srm_ = std::make_unique<SrMaps>();
    return *srm_;
  }

  // ---- selective repeat for SEND, WRITE with immediate and READ responses ----
  // Responder: packets of the message in progress (resp_.in_msg) placed ahead of a
  // hole by their PSN offset (responder.cpp).  the msg bitmap marks which
  // placed PSNs are such packets (the others: self-describing WRITEs).
  // PSNs at or after srr_.msg_limit (while after resp_.epsn) are known not to
  // belong to the message: a later one began there, or its last packet is
  // placed before.
  bool sr_msg_bit(wire::Psn p) const { return srm_ != nullptr && srm_->msg.test(p); }
  void sr_msg_set(wire::Psn p, bool on) {
    if (on || srm_ != nullptr) sr_maps().msg.set(p, on);
  }
  // A message's LAST packet placed ahead of a hole: what its completion needs.
  struct SrLast {
    bool valid = false;  // placed, at `psn`
    wire::Psn psn;
    uint32_t len = 0, imm = 0;
    bool has_imm = false, se = false;
    void take(const wire::PacketView& v, wire::Psn at, size_t n) {
      valid = true;
      psn = at;
      len = static_cast<uint32_t>(n);
      has_imm = v.imm != nullptr;
      imm = v.imm != nullptr ? v.imm->imm.value() : 0;
      se = v.bth->se();
    }
  };
  bool sr_in_message(const wire::PacketView& v, wire::Psn psn);
  bool sr_continues(const SrBits* mine, wire::Psn from, wire::Psn psn, bool send, bool next) const;
  bool sr_placed_outside(const SrBits* mine, wire::Psn from, wire::Psn to) const;
  bool sr_send_contiguous(wire::Psn from, wire::Psn psn, bool next) const;
  // `end`: the receive's bytes [0, end) the message fills, when its one
  // packet says so; SGEs past it are not checked (as a receive's lkeys are
  // judged for the bytes a message writes).
  bool grant_recv_hosts(RecvWqe& r, uint64_t end = UINT64_MAX);
  void sr_mark_placed(wire::Psn psn, bool next);
  void sr_lower_limit(wire::Psn psn);
  void sr_unplace_msg_from(wire::Psn psn);
  // `next`: the PSN after the message's last packet.
  void sr_message_ended(wire::Psn next);
  bool sr_advance_in_message();
  // The messages after the one in progress whose FIRST arrived after a hole,
  // in PSN order: a SEND that begins right after the placed LAST of the SEND
  // before it (in progress, or the previous entry), into the receive WQE
  // after that one's; or a multi-packet WRITE (its RETH names target and
  // length) after the previous entry's known end.  Their packets are placed
  // the same way, marked in the next bitmap (entry i holds the marked PSNs
  // from its first up to entry i+1's), and the first entry becomes the
  // message in progress when resp_.epsn reaches its first packet.
  struct SrNext {
    bool send = false;
    wire::Psn first;
    uint32_t count = 0;                        // packets placed (bits in the next bitmap)
    uint8_t* host = nullptr;                   // WRITE: the target
    std::atomic<uint64_t>* counter = nullptr;  // WRITE: its region's (AccessGrant)
    uint64_t len = 0;                // WRITE: the RETH length; SEND: the receive's capacity
    uint64_t rq_index = 0;           // SEND: the receive WQE it fills
    std::optional<wire::Psn> limit;  // a later message begins there
    SrLast last;
  };
  static constexpr int32_t kSackMaxSpan = 1024;
  static constexpr size_t kSackBytes = 4 + kSackMaxSpan / 8;
  // While a reported hole is open, a SACK again once packets arrived this
  // far past the newest one the last SACK showed: the requester counts what
  // is held here out of its window (in_flight_at) and keeps sending while
  // the hole is repaired, instead of stopping a window past it.
  static constexpr int32_t kSackRefresh = 48;
  void send_seq_nak(uint64_t now);
  void note_seq_nak(uint64_t at);
  void send_sack(uint64_t now);
  // advance_epsn: whether the newest SACK reported the hole at resp_.epsn
  // (then recorded as NAKed when that SACK left).
  bool sack_reported_hole();
  // Enough for a window of 16-packet messages; a message beyond waits for
  // its turn (it is resent).
  static constexpr uint32_t kSrNextMax = 8;
  struct SrMaps {
    SrBits placed;  // PSNs in (resp_.epsn, resp_.epsn + kSrSpan) already placed
    SrBits msg, next, rd;
    SrBits seen;  // PSNs after the hole kept whole (responder_hold.cpp)
    // Placed WRITE Only packets that are not their WRITE's last (Bth::kWriteMore).
    SrBits wr_more;
    // Requester: PSNs after una a SACK showed the responder holds (placed
    // or kept); cleared as una passes them (note_acked).
    SrBits sacked;
    std::array<SrNext, kSrNextMax> nexts;
    std::array<uint8_t, kSackBytes> sack;  // payload of the SACK being sent
  };
  // ---- selective repeat: request frames kept whole (responder_hold.cpp) ----
  // A request packet after a hole that could not be placed (a SEND packet
  // a message boundary may precede, a FIRST beyond kSrNextMax, a WRITE with
  // immediate whose FIRST is missing, a READ or atomic request) is kept: its
  // frame and view copied into a block from the engine (Engine::held_take),
  // run through the responder when resp_.epsn reaches it.  Up to kHeldSpan PSNs
  // past resp_.epsn; the SACK shows it as received, so it is not sent again.
  static constexpr int32_t kHeldSpan = 256;
  struct HeldRing {
    PsnBitmap<kHeldSpan / 64> bits;  // entries that hold a block
    // Entry psn % kHeldSpan: the PSN and its block (a wire::PacketView, then
    // the frame it points into).
    std::array<std::pair<wire::Psn, void*>, kHeldSpan> e{};
  };
  // The frame kept for `p` (nullptr: none).
  const wire::PacketView* held_at(wire::Psn p) const;
  bool sr_hold(const wire::PacketView& v, wire::Psn psn);
  // Runs the kept frames from resp_.epsn on through the responder, in order;
  // `jumped`: resp_.epsn moved by more than one packet since the last drain.
  void held_drain(uint64_t now, bool jumped);
  // Gives entry i's block back (what it holds is not needed any more).
  void held_release(size_t i);
  // Frees every entry resp_.epsn went past (or, `all`, every entry).
  void held_sweep(bool all);
  void respond(const wire::PacketView& v, uint64_t now);

  SrNext* sr_nexts() { return srm_->nexts.data(); }
  const SrNext* sr_nexts() const { return srm_->nexts.data(); }
  bool sr_next_bit(wire::Psn p) const { return srm_ != nullptr && srm_->next.test(p); }
  void sr_next_set(wire::Psn p, bool on) {
    if (on || srm_ != nullptr) sr_maps().next.set(p, on);
  }
  // The entry `psn` falls in (the last whose first is at or before it), or
  // srr_.next_n.
  uint32_t sr_next_of(wire::Psn psn) const;
  bool sr_open_next(const wire::PacketView& v, wire::Psn psn);
  bool sr_send_ends_before(wire::Psn psn, const SrNext* prev) const;
  bool sr_place_next(const wire::PacketView& v, wire::Psn psn);
  void sr_next_lower_limit(wire::Psn psn);
  // Takes back every next-message packet at or after `psn`; entries that
  // begin there or later are given up, and so are those after an entry
  // whose LAST is taken back.
  void sr_unplace_next_from(wire::Psn psn);
  void sr_drop_next() {
    if (srr_.next_n > 0) sr_unplace_next_from(sr_nexts()[0].first);
  }
  bool sr_take_next();
  // Requester: the newest packet resent alone after a sequence NAK, and when;
  // the newest go-back-N rewind (from srs_.rewind->psn), and when.  A NAK
  // naming the packet right after a single resend shows the responder kept
  // nothing after it; a NAK for a packet resent (or rewound over) within a
  // round trip was sent before the resend arrived.
  struct Resent {
    wire::Psn psn;
    uint64_t ns = 0;
  };
  // When each PSN was last resent alone (indexed modulo the resend ring's
  // size, with the PSN to tell an old entry); a peer that sent a SACK.
  // Once the peer sent a SACK: the transmission number of each request
  // packet's newest sending (indexed modulo kSentSeqSize, with the PSN), and
  // the newest transmission known to have arrived (the top of a SACK, an
  // ACK).  The links keep order, so a packet sent before one that arrived
  // and still missing was lost: sent again then, not on a timer.
  static constexpr size_t kSentSeqSize = 2 * static_cast<size_t>(kHeldSpan);
  // The transmission number of psn's newest sending, 0 when unknown.
  uint64_t sent_seq_of(wire::Psn psn) const {
    if (srs_.sent_seq.empty()) return 0;
    const auto& [p, s] = srs_.sent_seq[psn.value() % kSentSeqSize];
    return p == psn ? s : 0;
  }
  void note_delivered(wire::Psn psn) {
    srs_.delivered_seq = std::max(srs_.delivered_seq, sent_seq_of(psn));
  }
  // How long a resend counts as in flight: a round trip and its variance.
  uint64_t sr_in_flight_ns() const {
    return rtt_.valid() ? rtt_.srtt_ns() + 2 * rtt_.rttvar_ns() : rtt_.rto_ns();
  }
  // Requester: READ response packets placed ahead of the first missing one,
  // by PSN in (una, una + kSrSpan).
  bool rd_bit(wire::Psn p) const { return srm_ != nullptr && srm_->rd.test(p); }
  void rd_set(wire::Psn p, bool on) {
    if (!on && srm_ == nullptr) return;
    SrBits& rd = sr_maps().rd;
    if (rd.test(p) == on) return;
    rd.set(p, on);
    if (on) {
      ++srs_.rd_n;
    } else {
      --srs_.rd_n;
    }
  }
  bool rd_placed(const SendWqe& w, uint32_t idx) const {
    return idx >= w.resp_pkts && idx - w.resp_pkts < static_cast<uint32_t>(kSrSpan) &&
           rd_bit(w.first_psn + static_cast<int32_t>(idx));
  }
  // Re-requests every run of READ responses not placed (one READ request
  // per run); false on TX backpressure.
  bool rd_request_holes(const SendWqe& w, uint64_t now, bool probe);
  // ---- selective repeat: READ responses judged lost by order (completer.cpp) ----
  // Every READ request sent (the first one and each re-request of a range)
  // gets the next number; the responder answers requests in the order they
  // arrive, each range in PSN order, and the links keep order.  So a
  // response that came from request n shows every response asked for by a
  // request before n — and every earlier one of request n itself — either
  // arrived or was lost: those still missing are asked for again at once
  // (several holes back to back), not after a probe or a timeout.  A READ
  // with no response yet is left out: its request may be kept behind a hole
  // in the request PSNs, and answered after later re-requests.
  struct RdReq {
    uint64_t seq = 0;     // its number among the READ requests sent
    uint64_t wqe = 0;     // the READ's send-queue index ...
    uint64_t rd_seq = 0;  // ... and rd_seq (tells a reused slot)
    uint32_t from = 0;    // responses [from, to) asked for and not yet judged
    uint32_t to = 0;
  };
  static constexpr size_t kRdReqMax = 256;
  struct RdRun {
    uint64_t wqe;
    uint32_t from, to;
  };
  void rd_note_request(const SendWqe& w, uint32_t from, uint32_t to);
  bool rd_req_live(const RdReq& r) const;
  // Response `idx` of the READ at sq index `wi` arrived (placed): judges
  // what the order shows lost, and asks for it again.
  void rd_judge(uint64_t wi, uint32_t idx, uint64_t now);
  // Whether a hole at packet `idx` of `w` is resent alone (the responder
  // keeps what followed it).
  bool sr_resendable(const SendWqe& w, uint32_t idx) const;

  // Selective repeat, sending side (requester.cpp, completer.cpp).
  struct SrSender {
    // The newest hole a sequence NAK reported, while it is not acknowledged:
    // the tail-loss probe resends it.
    std::optional<wire::Psn> hole;
    // Single PSNs to resend, a ring (power of two, >= window).
    std::vector<wire::Psn> resend;
    uint64_t resend_head = 0, resend_tail = 0;
    std::optional<Resent> single;  // the newest packet resent alone
    std::optional<Resent> rewind;  // the newest go-back-N rewind
    // When each PSN was last resent alone (see Resent).
    std::vector<std::pair<wire::Psn, uint64_t>> resent_at;
    // Transmission numbers (see kSentSeqSize), once the peer sent a SACK.
    bool sack_seen = false;
    // Bits set in SrMaps::sacked and SrMaps::rd (in_flight_at).
    uint32_t sacked_n = 0, rd_n = 0;
    std::vector<std::pair<wire::Psn, uint64_t>> sent_seq;
    uint64_t tx_seq = 0, delivered_seq = 0;
    // READ requests in the order sent (see RdReq); at most kRdReqMax.
    std::vector<RdReq> rd_reqs;
    uint64_t rd_tx = 0;
    std::vector<RdRun> rd_lost;  // scratch of rd_judge()
  };
  SrSender srs_;
  // Selective repeat, receiving side (responder_sr.cpp, responder_hold.cpp).
  struct SrReceiver {
    uint32_t count = 0;      // PSNs placed ahead of the hole
    uint32_t msg_count = 0;  // bits set in the msg bitmap
    std::optional<wire::Psn> msg_limit;
    SrLast last;  // of the message in progress
    // The newest packet seen after the hole (placed or not): how far a SACK reaches.
    std::optional<wire::Psn> seen_top;
    // The newest packet after a hole that could not be placed.
    std::optional<wire::Psn> drop_top;
    // How far the newest SACK reached (its last PSN) and when it left: a
    // hole it showed missing was reported then (advance_epsn).
    std::optional<wire::Psn> sack_top;
    uint64_t sack_ns = 0;
    uint32_t next_n = 0;  // entries in use (in SrMaps::nexts)
    std::unique_ptr<HeldRing> held;
    uint32_t held_n = 0;  // entries in use
  };
  SrReceiver srr_;

  // ---- congestion control (qp_congestion.cpp) ----
  // Data packets (requests with payload or a READ's response) may leave now;
  // otherwise the pace timer is armed for when they may (no busy polling).
  bool cc_may_send(uint64_t now);
  // The window the requester keeps to: cfg_.window, or less by the delay control.
  uint32_t cc_window() const { return cc_.window(cfg_.window); }
  // A received packet: CE on data answers with a CNP (notification point);
  // a CNP cuts the rate (reaction point).
  void cc_on_ce(uint64_t now);
  void cc_on_cnp(uint64_t now);
  void cc_on_rtt(uint64_t rtt_ns, uint64_t now);
  void cc_on_timeout(uint64_t now);
  void cc_on_sent(const wire::BuildSpec& spec, uint32_t frame_len, uint64_t now);

 public:
  // Whether a packet of this opcode is data for the pacer and DCQCN.
  static bool cc_counts_as_data(wire::Opcode op);

 private:
  CongestionControl cc_;
};

}  // namespace dpdat::rc
