#pragma once
// The run-to-completion protocol engine: owns a set of queue pairs, a packet
// I/O port and timers, and advances all of them in poll(now):
//   1. rx_burst, parse (strict, ICRC checked), demultiplex by destination QPN
//      in software, run the RC state machines; UD packets go to the GSI
//      handler (QP1: connection-management MADs) or to a UD queue pair
//   2. run due timers (retransmit, RNR, ACK coalescing) — after RX, so an
//      ACK already queued is seen before its retransmission timer fires;
//      retransmission and tail-probe timers wait for a poll that drained the
//      RX queue and did not follow a gap (see run_timers)
//   3. let active queue pairs emit within their windows
//   4. flush TX in bursts; a full TX ring is back-pressure (bounded retries,
//      frames kept, counted), never a silent drop.
// Time is a parameter; the engine never reads a clock itself.  No locks, no
// allocation on the datapath after set-up.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "rc/engine/engine_group.hpp"
#include "rc/engine/packet_io.hpp"
#include "rc/mr_table.hpp"
#include "rc/qp/qp_api.hpp"
#include "rc/qp/qp_ring.hpp"
#include "rc/types.hpp"
#include "rc/ud/ud_qp.hpp"
#include "wire/cm.hpp"
#include "wire/packet.hpp"

namespace dpdat::rc {

struct EngineConfig {
  uint32_t max_qps = 1024;
  uint32_t pmtu = 1024;  // largest PMTU any QP may use (parser limit)
  uint16_t burst = 32;
  uint16_t tx_retries = 4;   // tx_burst attempts per flush before back-pressure
  uint32_t qpn_base = 0x11;  // first QPN handed out (0/1 are special in IBA)
  // Request frames the queue pairs keep after a hole until it is filled
  // (Qp::sr_hold), all together at most this many bytes of pool blocks.
  size_t held_max_bytes = size_t{16} << 20;
  // A poll this long after the previous one follows a gap (the engine's
  // thread was descheduled or slept, and its peer may have been too): a
  // retransmission or probe timer that fell due during the gap waits until
  // gap_grace_ns after it, so the peer gets a round trip to answer what it
  // could not answer while away (once, however long the gap was).  While
  // received frames wait unread, such a timer waits too, up to
  // timer_lag_max_ns past due.
  uint64_t poll_gap_ns = 20'000;
  uint64_t gap_grace_ns = 50'000;
  uint64_t timer_lag_max_ns = 1'000'000;
};

// An engine's counts, defined once: DPDAT_ENGINE_COUNTERS(X) calls X(name)
// for each single count; the fields and telemetry's names come from it.
// The counts by reason (arrays) follow in the struct.
// clang-format off
#define DPDAT_ENGINE_COUNTERS(X)                                              \
  X(rx_frames) X(rx_dropped_parse) X(rx_no_qp) X(tx_frames)                   \
  X(tx_backpressure) X(tx_alloc_fail) X(timers_fired) X(timers_deferred)      \
  /* frames handed to the engine whose queue pair they are for, by this */    \
  /* one / to this one; hand-offs refused for a full ring */                  \
  X(handed_off) X(handed_in) X(handoff_full)                                  \
  /* polls its API layer ran on a thread other than the engine's own (a */   \
  /* consumer that posted or waited and drove the engine itself) */          \
  X(consumer_steps)                                                           \
  /* engine 0: steps that found the API layer's control work (CM, */          \
  /* housekeeping) due but could not take every engine's token for it; */   \
  /* nanoseconds its drivers waited for the tokens (or the interface lock) */ \
  /* to do that work */                                                       \
  X(control_deferred) X(control_wait_ns)                                      \
  /* GSI (QP1): frames given to the handler, dropped for want of one, */      \
  /* sent by send_gsi(), refused by send_gsi() for back-pressure / an */      \
  /* invalid message.  A UD frame for no queue pair counts in rx_no_qp. */    \
  X(gsi_rx) X(rx_gsi_dropped) X(gsi_tx) X(gsi_tx_backpressure)                \
  X(gsi_tx_invalid)                                                           \
  /* refusals by reason (see below) */                                        \
  X(rx_foreign_src) X(psn_out_of_window) X(cm_malformed) X(cm_req_refused)    \
  X(cm_forged_ignored) X(cm_dreq_repeated)                                    \
  /* frames after a hole not kept because held_max_bytes was reached (the */  \
  /* SACK shows them missing: the requester sends them again) */              \
  X(sr_kept_refused)
// clang-format on

struct EngineCounters {
#define DPDAT_ENGINE_COUNTER_FIELD(name) uint64_t name = 0;
  DPDAT_ENGINE_COUNTERS(DPDAT_ENGINE_COUNTER_FIELD)
#undef DPDAT_ENGINE_COUNTER_FIELD
#define DPDAT_ENGINE_COUNTER_ONE(name) +1
  static constexpr size_t kCount = 0 DPDAT_ENGINE_COUNTERS(DPDAT_ENGINE_COUNTER_ONE);
#undef DPDAT_ENGINE_COUNTER_ONE
  uint64_t rx_reject[static_cast<size_t>(wire::Reject::kCount)] = {};
  // What peers sent that the queue pairs and the CM refused, by reason: a
  // hostile peer's attacks show here (parse refusals count in rx_reject[],
  // unknown QPNs in rx_no_qp).  Kept on the engine, not the queue pair: the
  // connection an attack broke is gone by the time one looks.
  //   rx_foreign_src   RC frame for a live QPN whose IPv4 source is not the
  //                    queue pair's peer (spoofed or stray): dropped
  //   psn_out_of_window request PSN more than kPsnFar from the expected one
  //                    (no requester has that many packets in flight)
  //   resp_errors[]    fatal responder refusals (NAK sent, QP to error), by
  //                    Qp::RespState error state from kErrLength on
  //   rkey_refused[]   remote key checks refused (rkey guesses, huge READs,
  //                    bounds), by AccessError
  //   cm_malformed     GSI MADs the CM codec refused
  //   cm_req_refused   REQs the CM answered with a REJ itself (no listener,
  //                    bad MTU, RSP busy)
  //   cm_forged_ignored DREQs naming no connection of the sender (wrong
  //                    comm IDs, or not from the connection's peer address):
  //                    answered with a DREP as IBA asks, the connection kept
  //   cm_dreq_repeated DREQs repeated by the peer of a connection already
  //                    closed and freed here (our DREP was lost): answered
  //                    again, not counted as forged
  //   reqs_refused[]   REQs the CM rejected ("no resources") for a pending-
  //                    request limit, by the limit (dat::ReqLimit: per
  //                    listener, per interface, per peer address), or
  //                    because their address's connections had too many
  //                    keys refused lately
  static constexpr int32_t kPsnFar = 1 << 20;
  static constexpr size_t kRespErrorKinds = 8;
  uint64_t resp_errors[kRespErrorKinds] = {};
  uint64_t rkey_refused[static_cast<size_t>(AccessError::kCount)] = {};
  static constexpr size_t kReqLimits = 4;
  uint64_t reqs_refused[kReqLimits] = {};

  // fn(name, value) for every single count (not the arrays), in list order.
  template <typename Fn>
  void for_each(Fn&& fn) const {
#define DPDAT_ENGINE_COUNTER_VISIT(name) fn(#name, name);
    DPDAT_ENGINE_COUNTERS(DPDAT_ENGINE_COUNTER_VISIT)
#undef DPDAT_ENGINE_COUNTER_VISIT
  }
};
// Every single count is one of the list (none added beside it, which
// telemetry would miss); the arrays are the rest.
static_assert(sizeof(EngineCounters) ==
              (EngineCounters::kCount + static_cast<size_t>(wire::Reject::kCount) +
               EngineCounters::kRespErrorKinds + static_cast<size_t>(AccessError::kCount) +
               EngineCounters::kReqLimits) *
                  sizeof(uint64_t));

class Engine {
 public:
  Engine(PacketIo& io, MrTable& mr, const EngineConfig& cfg = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Control path (engine thread).  nullptr when out of QPNs.
  Qp* create_qp(uint32_t pz, const QpConfig& cfg, CompletionQueue* send_cq,
                CompletionQueue* recv_cq);
  void destroy_qp(Qp* qp);
  Qp* find_qp(uint32_t qpn) const;

  // UD queue pairs (rc/ud/ud_qp.hpp).  Their QPNs (ud_qpn_base()): in a
  // group, the top of the engine's 16-bit range, which its RC queue pairs
  // never take; an engine alone, above every RC QPN (its 65,536 and more
  // RC queue pairs keep their numbers).  At most kMaxUdQps per engine.
  // nullptr when out of numbers.
  static constexpr uint32_t kUdQpnOffset = 0xF000;
  static constexpr uint32_t kUdQpnAlone = 0xF00000;
  static constexpr uint32_t kMaxUdQps = 0x0FE0;
  UdQp* create_ud_qp(uint32_t pz, const UdConfig& cfg, CompletionQueue* send_cq,
                     CompletionQueue* recv_cq);
  void destroy_ud_qp(UdQp* qp);
  UdQp* find_ud_qp(uint32_t qpn) const {
    const uint32_t i = qpn - ud_qpn_base();
    return i < uds_.size() ? uds_[i].get() : nullptr;
  }
  uint32_t ud_qpn_base() const {
    return group_ != nullptr ? (cfg_.qpn_base & ~0xFFFFu) | kUdQpnOffset : kUdQpnAlone;
  }
  // A UD queue pair has sends waiting for TX buffers: poll() sends them as
  // buffers free up (UdQp::drain_sends).
  void ud_sends_wait(UdQp* qp);

  // Joins a group as engine `index` (its qpn_base must be
  // EngineGroup::qpn_base(index)); frames for other members' QPNs are handed
  // over instead of dropped.  Set up before the engines run.
  void join_group(EngineGroup* group, size_t index) {
    group_ = group;
    group_index_ = index;
  }

  // ---- GSI (QP1): connection-management MADs ----
  // Called from poll() for every received UD SEND Only frame addressed to
  // QP1 (wire::kGsiQpn); wire::parse_cm_packet() decodes it.  The view
  // aliases the RX buffer, which is released when the handler returns: copy
  // what outlives the call.  The handler runs on the engine thread and may
  // call send_gsi(), create_qp(), find_qp() and the Qp control calls.  Without
  // a handler such frames are dropped (rx_gsi_dropped).  In an EngineGroup,
  // QP1 belongs to engine 0: the other engines hand its frames to engine 0,
  // so set the handler there.  Set up before the engine runs (engine thread).
  using GsiHandler = std::function<void(const wire::PacketView& v, uint64_t now)>;
  void set_gsi_handler(GsiHandler h) { gsi_handler_ = std::move(h); }
  // Builds one CM frame (wire::build_cm_frame) into a TX buffer; it leaves in
  // the next poll()'s TX flush.  False, with nothing queued, under
  // back-pressure (no TX buffer now: retry later; gsi_tx_backpressure) or when
  // write_cm_mad() refuses the message (pdata_len too long or an unknown
  // type; gsi_tx_invalid).  Engine thread only.
  bool send_gsi(const wire::CmPath& path, const wire::CmMessage& m);

  // One iteration of the loop.  Returns the number of frames received plus
  // sent, so a caller can back off when it stays 0.
  uint32_t poll(uint64_t now_ns);
  // Builds what the active queue pairs can send now (posted work within their
  // windows) without receiving and without sending the last, partial burst:
  // those frames wait for the next poll() or flush() (a full burst goes out
  // as it fills).  For a consumer that posts several requests before it
  // polls: one transmit burst for them, not one each.
  void emit(uint64_t now_ns) { progress_active(now_ns); }
  // Sends what was built outside poll() (send_gsi() from a CM handler run
  // after it) without receiving; returns the frames sent.
  uint32_t flush() { return flush_tx(); }
  // True when no queue pair has anything queued, in flight or timed.
  bool idle() const;
  // True when nothing can progress before new input or a timer: no active
  // queue pair and no frame waiting for TX.  O(1), for idle back-off.
  bool idle_now() const {
    return active_.empty() && tx_ready_.empty() && ud_waiting_.empty() && !has_handed_in();
  }
  // Whether another engine of the group has handed frames over to this one
  // that it has not processed yet.  Any thread (a sleeping loop checks it).
  bool has_handed_in() const {
    if (group_ == nullptr) return false;
    for (size_t from = 0; from < group_->size(); ++from)
      if (from != group_index_ && !group_->ring(from, group_index_).empty()) return true;
    return false;
  }
  // The earliest timer's deadline (0: none).  Any thread: a sleeping loop
  // reads it while a consumer thread may be arming or running timers.
  uint64_t next_timer_deadline() const { return next_deadline_.load(std::memory_order_relaxed); }

  const EngineCounters& counters() const { return ctr_; }
  // For the queue pairs' and the CM's refusal counts (engine thread, or
  // the holder of the engine token).
  EngineCounters& counters() { return ctr_; }
  template <typename Fn>
  void for_each_qp(Fn fn) const {
    for (const auto& qp : qps_)
      if (qp != nullptr) fn(*qp);
  }
  MrTable& mr() { return mr_; }
  const EngineConfig& config() const { return cfg_; }
  // Queue pairs that exist now.
  uint32_t qp_count() const { return live_qps_; }
  // Where the queue pairs' rings come from (qp_ring.hpp).
  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }

  // ---- used by Qp ----
  // A TX buffer for one frame, or nullptr under back-pressure.
  Frame* tx_frame();
  // `flags`: kFrameTx* (kFrameTxIpCsum when the frame was built for the
  // device's IPv4 checksum offload).
  void tx_commit(Frame* f, uint32_t len, uint32_t flags = 0);
  // Whether frames are to be built with the IPv4 checksum left to the device.
  bool tx_ip_csum_offload() const { return tx_ip_csum_offload_; }
  void tx_abort(Frame* f);
  void arm_timer(Qp* qp, QpTimer kind, uint64_t deadline);
  // A block of pool() for a frame a queue pair keeps after a hole, within
  // cfg.held_max_bytes for the engine; nullptr (counted) when over.
  void* held_take(size_t bytes) {
    const size_t b = BlockPool::class_bytes(BlockPool::class_of(bytes));
    if (held_bytes_ + b > cfg_.held_max_bytes) {
      ctr_.sr_kept_refused++;
      return nullptr;
    }
    void* p = pool_.take(bytes);
    if (p != nullptr) held_bytes_ += b;
    return p;
  }
  void held_give(void* p, size_t bytes) {
    if (p == nullptr) return;
    held_bytes_ -= BlockPool::class_bytes(BlockPool::class_of(bytes));
    pool_.give(p, bytes);
  }
  size_t held_bytes() const { return held_bytes_; }
  void activate(Qp* qp);
  // Lets every active queue pair send what it can (poll()'s last part).
  void progress_active(uint64_t now);
  // A queue pair went to error (Qp::set_error): its QPN is kept for
  // take_errors(), so the layer above learns of broken connections without
  // looking at every queue pair.
  void note_error(uint32_t qpn) { errored_.push_back(qpn); }

  // QPNs of queue pairs that went to error since the last call (the queue
  // pair may be gone, its QPN reused: look it up and check its state).
  bool has_errors() const { return !errored_.empty(); }
  template <typename Fn>
  void take_errors(Fn fn) {
    errored_swap_.clear();
    std::swap(errored_, errored_swap_);
    for (const uint32_t qpn : errored_swap_) fn(qpn);
  }

 private:
  // Timers: a binary min-heap by deadline with at most one entry per QP and
  // kind, whose position the QP keeps (Qp::timer_slot_), so arming moves the
  // entry instead of adding one.  Its capacity grows with the queue pairs
  // (create_qp reserves room for every kind of every queue pair that
  // exists), so it never allocates on the data path.
  struct TimerEntry {
    uint64_t deadline;
    Qp* qp;
    QpTimer kind;
  };
  // rx_drained: this poll emptied RX and the hand-off rings.  Without it,
  // retransmission and probe timers wait for the next poll; one that fell
  // due during a gap waits out gap_grace_ns after it, once.
  void run_timers(uint64_t now, bool rx_drained);
  void heap_place(size_t i, const TimerEntry& e);
  void heap_up(size_t i);
  void heap_down(size_t i);
  void heap_remove(size_t i);
  bool dispatch(const Frame& f, uint64_t now, bool icrc_checked);
  bool dispatch_ud(const Frame& f, const wire::PacketView& v, uint64_t now, bool icrc_checked);
  bool hand_off(const Frame& f, size_t owner);
  uint32_t flush_tx();

  PacketIo& io_;
  MrTable& mr_;
  EngineConfig cfg_;
  EngineCounters ctr_;
  BlockPool pool_;         // before qps_: the queue pairs give their rings back to it
  size_t held_bytes_ = 0;  // of pool_, in held_take() blocks
  // Slot i holds QPN qpn_base + i; grown on demand up to max_qps, freed
  // slots reused (free_slots_) before new ones are added.
  std::vector<std::unique_ptr<Qp>> qps_;
  std::vector<uint32_t> free_slots_;
  uint32_t live_qps_ = 0;
  // UD queue pairs: slot i holds QPN ud_qpn_base() + i, reused as qps_.
  std::vector<std::unique_ptr<UdQp>> uds_;
  std::vector<uint32_t> free_uds_;
  std::vector<UdQp*> ud_waiting_;                 // UD queue pairs with sends waiting
  std::vector<uint32_t> errored_, errored_swap_;  // see note_error()
  std::vector<Qp*> active_;
  std::vector<Qp*> active_next_;
  std::vector<TimerEntry> timers_;  // heap; capacity reserved, see TimerEntry
  // timers_.front().deadline (0: empty), kept by heap_place / heap_remove
  // for readers outside the engine's thread (next_timer_deadline).
  std::atomic<uint64_t> next_deadline_{0};
  std::vector<Frame> rx_;
  wire::PacketView rx_view_;     // dispatch()'s parse result, reused
  std::vector<Frame> tx_ready_;  // built frames waiting for tx_burst
  std::vector<Frame> tx_cache_;  // allocated, unused TX buffers
  Frame tx_building_{};
  bool building_ = false;
  bool tx_ip_csum_offload_ = false;  // io_.offloads() has kOffloadTxIpCsum
  std::vector<Qp*> touched_;
  std::vector<Frame> release_;
  EngineGroup* group_ = nullptr;
  size_t group_index_ = 0;
  GsiHandler gsi_handler_;
  uint64_t last_poll_ns_ = 0;
  uint64_t back_from_gap_ns_ = 0;  // the first poll after the last gap
};

}  // namespace dpdat::rc
