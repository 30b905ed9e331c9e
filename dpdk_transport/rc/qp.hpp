#pragma once
// One reliable-connection queue pair: requester (segmentation, PSNs, window,
// fences, retransmission), responder (PSN / opcode-sequence validation, access
// checks, placement, RNR, READ responses, atomics with a replay cache,
// coalesced ACKs) and completer (ACK / NAK / READ response processing,
// in-order completions).  Owned and driven by exactly one Engine; never
// touched by another thread.

#include <array>
#include <cstdint>
#include <deque>
#include <span>
#include <string_view>
#include <vector>

#include "mr_table.hpp"
#include "srq.hpp"
#include "types.hpp"
#include "wire/packet.hpp"

namespace dpdat::rc {

class Engine;

struct QpCounters {
  uint64_t tx_packets = 0, rx_packets = 0, retransmits = 0, timeouts = 0, rnr_naks_rx = 0,
           rnr_naks_tx = 0, seq_naks_rx = 0, seq_naks_tx = 0, duplicates_rx = 0,
           out_of_order_rx = 0, acks_tx = 0, acks_rx = 0, read_replays = 0, atomic_replays = 0,
           bad_responses = 0, cq_stalls = 0, tx_backpressure = 0, sr_placed_ooo = 0, sr_resends = 0;
};

class Qp {
 public:
  enum class TimerKind : uint8_t { kRetransmit, kRnr, kAck, kCount };

  Qp(Engine& engine, MrTable& mr, uint32_t qpn, uint32_t pz, const QpConfig& cfg,
     CompletionQueue* send_cq, CompletionQueue* recv_cq);
  Qp(const Qp&) = delete;
  Qp& operator=(const Qp&) = delete;

  uint32_t qpn() const { return qpn_; }
  uint32_t pz() const { return pz_; }
  QpState state() const { return state_; }
  QpError error() const { return error_; }
  const QpConfig& config() const { return cfg_; }
  const QpCounters& counters() const { return ctr_; }

  // The path MTU the connection agreed on (the CM's choice, at most the one
  // the QP was created with).  Only in kReset; false for any other state or a
  // size that is not an IBA MTU.
  bool set_pmtu(uint32_t pmtu);
  // Reset -> RTS.  sq_psn: first PSN we send; rq_psn: first PSN we expect.
  bool connect(const PathInfo& path, wire::Psn sq_psn, wire::Psn rq_psn);

  // Posting (same thread as the engine).
  enum class PostResult : uint8_t { kOk, kQueueFull, kInvalidState, kInvalidWr };
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
  // Deadline of this QP's entry in the engine's timer heap per kind (0: none);
  // maintained by the Engine so the heap holds at most one live entry each.
  std::array<uint64_t, static_cast<size_t>(TimerKind::kCount)> timer_queued_{};

 private:
  struct SendWqe {
    SendWr wr;
    uint64_t total_len = 0;
    wire::Psn first_psn;
    uint32_t npkts = 0;      // PSNs the WR occupies (READ: response packets)
    uint32_t sent = 0;       // next packet index to (re)send
    uint32_t resp_pkts = 0;  // READ: response packets placed in order
    bool started = false;    // PSNs assigned, local SGEs checked
    uint64_t rd_seq = 0;     // READ / atomic: running number among those
    bool done = false;
    WcStatus status = WcStatus::kSuccess;
    uint32_t result_rmr_context = 0;
    std::array<uint8_t*, kMaxSge> host{};
  };
  struct RecvWqe {
    RecvWr wr;
    uint64_t capacity = 0;
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
  // sq_cap_ / rq_cap_ are the configured depths that posting enforces.
  SendWqe& sq(uint64_t i) { return sq_[i & (sq_.size() - 1)]; }
  const SendWqe& sq(uint64_t i) const { return sq_[i & (sq_.size() - 1)]; }
  RecvWqe& rq(uint64_t i) { return rq_[i & (rq_.size() - 1)]; }

  // requester
  bool emit_requests(uint64_t now);
  bool start_wqe(SendWqe& w, uint64_t now);
  bool emit_one(SendWqe& w, uint64_t now);
  bool emit_packet(const SendWqe& w, uint32_t idx, uint64_t now);
  bool sr_packet(const SendWqe& w) const;
  bool emit_sr_resends(uint64_t now);
  size_t gather(const SendWqe& w, uint64_t offset, uint64_t len,
                std::array<std::span<const uint8_t>, kMaxSge>& out) const;
  static void scatter(const std::array<uint8_t*, kMaxSge>& host, const Sge* sge, uint32_t nsge,
                      uint64_t offset, std::span<const uint8_t> data);
  wire::Psn una_psn() const;
  bool has_outstanding() const;
  void rewind_to(wire::Psn psn, uint64_t now);
  void arm_retransmit(uint64_t now);
  void complete_in_order(uint64_t now);
  void fail_wqe_at(wire::Psn psn, WcStatus st, QpError why, uint64_t now);
  void on_ack_packet(const wire::PacketView& v, uint64_t now);
  void on_read_response(const wire::PacketView& v, uint64_t now);
  void on_atomic_ack(const wire::PacketView& v, uint64_t now);
  void note_acked(wire::Psn psn, uint64_t now);
  void finish_rd_atomic(SendWqe& w);
  void after_response(wire::Psn psn, uint64_t now);

  // responder
  void on_request(const wire::PacketView& v, uint64_t now);
  void handle_duplicate(const wire::PacketView& v, uint64_t now);
  bool respond_emit(uint64_t now);
  void send_ack(uint8_t syndrome, wire::Psn psn, uint64_t now);
  void responder_fatal(uint8_t nak_code, wire::Psn psn, QpError why, uint64_t now);
  void remember(const ReplayEntry& e);
  bool place_out_of_order(const wire::PacketView& v, int32_t ahead);
  void advance_epsn(uint64_t now);
  bool sr_bit(wire::Psn p) const {
    return (sr_bits_[(p.value() / 64) % kSrWords] >> (p.value() % 64)) & 1u;
  }
  void sr_set(wire::Psn p, bool on) {
    uint64_t& w = sr_bits_[(p.value() / 64) % kSrWords];
    const uint64_t m = uint64_t{1} << (p.value() % 64);
    w = on ? (w | m) : (w & ~m);
  }

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
  // The head receive completed (its completion was pushed).
  void retire_recv() {
    ++rq_head_;
    if (srq_ != nullptr) srq_->retire();
  }

  Engine& engine_;
  MrTable& mr_;
  const uint32_t qpn_;
  const uint32_t pz_;
  QpConfig cfg_;  // only pmtu changes, and only in kReset (set_pmtu)
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

  // requester / completer
  std::vector<SendWqe> sq_;
  uint64_t sq_head_ = 0;  // oldest WR not yet completed
  uint64_t sq_emit_ = 0;  // WR the emitter works on
  uint64_t sq_tail_ = 0;  // next free slot
  wire::Psn next_psn_;    // PSN of the next WR that has never been started
  wire::Psn acked_psn_;   // every request PSN <= this was acknowledged
  uint32_t retries_left_ = 0;
  uint64_t first_timeout_ns_ = 0;  // first of the current run of timeouts (0: none)
  uint32_t backoff_ = 0;           // consecutive retransmission timeouts
  uint32_t rnr_retries_left_ = 0;
  bool rnr_waiting_ = false;
  wire::Psn rnr_psn_;
  uint64_t last_bind_end_ = 0;  // index + 1 of the newest bind WR started (0: none)
  uint32_t since_ack_req_ = 0;
  bool read_gap_pending_ = false;  // a READ re-request for read_gap_psn_ is out
  wire::Psn read_gap_psn_;
  uint32_t rd_atomic_outstanding_ = 0;
  uint64_t rd_seq_next_ = 0;  // rd_seq of the next READ / atomic started
  bool rd_atomic_room() const;

  // responder
  std::vector<RecvWqe> rq_;
  uint64_t rq_head_ = 0, rq_tail_ = 0;
  wire::Psn epsn_;
  uint32_t msn_ = 0;
  bool nak_sent_ = false;  // one sequence-error NAK per gap
  // The NAK that moved this responder to error, repeated to retransmitted
  // requests so the requester learns the reason even when the NAK was lost.
  bool fatal_nak_valid_ = false;
  uint8_t fatal_nak_syndrome_ = 0;
  wire::Psn fatal_nak_psn_;
  enum class InMsg : uint8_t { kNone, kSend, kWrite } in_msg_ = InMsg::kNone;
  uint64_t msg_offset_ = 0;
  uint8_t* write_host_ = nullptr;
  uint64_t write_len_ = 0;
  bool recv_in_use_ = false;  // rq(rq_head_) consumed by the message in progress
  uint32_t unacked_ = 0;
  bool ack_req_seen_ = false;
  bool ack_owed_ = false;
  std::deque<RespJob> resp_q_;
  // Selective repeat: PSNs in (epsn_, epsn_ + kSrSpan) already placed.
  static constexpr uint32_t kSrWords = 32;
  static constexpr int32_t kSrSpan = kSrWords * 64;
  std::array<uint64_t, kSrWords> sr_bits_{};
  uint32_t sr_count_ = 0;
  std::vector<wire::Psn> sr_resend_;  // requester: single PSNs to resend
  std::vector<ReplayEntry> replay_;
  uint32_t replay_next_ = 0;
};

}  // namespace dpdat::rc
