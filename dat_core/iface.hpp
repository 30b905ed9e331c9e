#pragma once
// One dpdat interface: its link, memory tables, RC engines (shards, one per
// queue of the link: shard.hpp) and connection manager, and the interface
// lock.  Threading rules: core.hpp.

#include "objects.hpp"
#include "shard.hpp"

namespace dpdat::dat {

// How late housekeeping may be before its step waits for every token
// (Iface::control_late), and how long after a try that found a token held
// the next one comes (Iface::control_wanted).
inline constexpr uint64_t kControlJoinNs = 1'000'000;
inline constexpr uint64_t kControlRetryNs = 20'000;

// Limits an interface reports (DAT IA / EP attributes are filled from these)
// and enforces.  max_eps, max_lmrs, max_rmrs, max_evds and max_pzs may be set
// per interface (config keys of the same names, IfaceConfig); the tables
// behind them grow on demand, so a large limit costs nothing until used.
struct Limits {
  uint32_t max_eps = 1u << 16;
  uint32_t max_dto_per_ep = 4096;
  uint32_t max_evds = 1u << 17;  // two per endpoint at max_eps
  uint32_t max_evd_qlen = 1u << 16;
  uint32_t max_iov = rc::kMaxSge;
  uint32_t max_lmrs = 1u << 20;
  uint32_t max_rmrs = 1u << 20;
  uint32_t max_pzs = 1u << 16;
  uint64_t max_lmr_size = uint64_t{1} << 40;
  uint64_t max_message_size = 1u << 30;
  uint32_t max_rdma_read_per_ep = 16;
  uint32_t max_cm_pdata = static_cast<uint32_t>(wire::kCmReqPdata);
  uint32_t max_srqs = 1024;
  uint32_t max_recv_per_srq = 1u << 16;
  uint32_t max_ep_per_srq = 1024;
  // Connection requests that may wait for an answer at once (not yet
  // accepted or rejected by the consumer), per PSP/RSP, per interface and
  // per source address; a REQ beyond any is rejected (REJ "no resources")
  // and counted.  The per-peer cap keeps one address from taking the whole
  // interface's budget: others still connect.
  uint32_t max_pending_crs_per_sp = 1024;
  uint32_t max_pending_crs = 4096;
  uint32_t max_pending_crs_per_peer = 512;
  // Remote keys the queue pairs may refuse to one source address within
  // kKeyRefusalWindowNs: past it, that address's REQs are refused (REJ "no
  // resources") until the window ends.  A wrong key breaks the connection
  // that used it, so guessing keys takes a connection per guess: this
  // bounds the guesses an address gets per second.
  uint32_t max_key_refusals_per_peer = 64;
};
inline constexpr uint64_t kKeyRefusalWindowNs = 1'000'000'000;

// The limit a REQ was refused for: the index of
// rc::EngineCounters::reqs_refused (telemetry: reqs_refused_per_listener,
// _per_interface, _per_peer, _key_refusals).
enum class ReqLimit : uint8_t { kListener, kInterface, kPeer, kKeyRefusals, kCount };
static_assert(static_cast<size_t>(ReqLimit::kCount) == rc::EngineCounters::kReqLimits);

struct PassiveRec {
  Cr* cr = nullptr;  // pending request
  Ep* ep = nullptr;  // accepted
  bool rejected = false;
  wire::CmMessage rej;
  uint64_t expires = 0;
};

// The DREQ of a connection this side left abruptly (dat_ep_disconnect with
// DAT_CLOSE_ABRUPT_FLAG, dat_ep_free, dat_ia_close): the EP is DISCONNECTED
// at once, but the DREQ (and the ACK sent ahead of it) is repeated until
// the peer answers with a DREP, so that a peer whose first DREQ was lost
// still learns of the disconnect, and dat_ia_close can wait (bounded) until
// the peer has taken everything this side sent (see ia_close).
struct PendingDreq {
  uint32_t comm = 0;  // our communication ID (the DREP's remote_comm_id)
  wire::MacAddr mac{};
  uint32_t ip = 0;
  wire::CmMessage dreq;
  uint64_t next_retx = 0, retx_interval = 0;
  uint32_t retries = 0;
  const Ia* owner = nullptr;  // the IA whose EP sent it (compared, never read)
};

// A CM MAD received by the engine (GSI), decoded, waiting for the CM.
struct CmIn {
  wire::CmMessage m;
  wire::MacAddr mac{};
  uint32_t ip = 0;
  uint16_t udp_port = 0;
};

struct Iface {
  std::mutex mu;  // control path (IfaceLock: with every shard's token)
  IfaceConfig cfg;
  Limits limits;
  std::unique_ptr<Link> link;  // the engines' packet I/O: destroyed after them
  std::unique_ptr<rc::MrTable> mr;
  // The engines, one per queue of the link (IfaceConfig::engines, or fewer
  // when the link has fewer queues), and the rings they hand frames over in.
  std::vector<std::unique_ptr<Shard>> shards;
  std::unique_ptr<rc::EngineGroup> group;  // with more than one engine
  rc::Engine* engine = nullptr;            // shards[0]'s: QP1, the CM's frames
  uint32_t pmtu = 1024;
  std::unordered_map<uint32_t, Ep*> ep_by_qpn;
  std::unordered_map<uint32_t, Ep*> ep_by_comm;
  std::unordered_map<uint64_t, Sp*> listeners;
  std::unordered_map<uint64_t, PassiveRec> passive;  // (peer ip << 32 | peer comm id)
  std::vector<Evd*> cq_evds;
  std::unordered_map<uint32_t, Lmr*> lmr_by_ctx;
  std::vector<Srq*> srqs;
  std::unordered_set<Ep*> watched;  // EPs with CM timers or a connection to watch
  std::vector<Ep*> watched_pass;    // cm_timers()'s copy of `watched`
  // Queue pairs connected by attributes that the housekeeping pass looks
  // at (qp_attr_pass): in RTR (their first packet), or in SQD draining.
  std::unordered_set<Ep*> qp_attr_watch;
  // Abrupt disconnects awaiting their DREP, by our communication ID.
  std::unordered_map<uint32_t, PendingDreq> pending_dreqs;
  std::vector<std::pair<wire::CmMsg, uint32_t>> cm_drops;  // cfg.cm_drop: still to lose
  std::vector<CmIn> cm_in;                                 // shard 0's token held
  // CM messages received and not yet handled: the other engines hold their
  // completions back meanwhile, so that a connection's events come before the
  // completions that follow them.  Written by shard 0 (rarely), read by all.
  std::atomic<uint32_t> cm_pending{0};
  // Tells the progress threads of `mask`'s shards that a consumer stopped
  // driving them (a waiter going to sleep): they take over at once.
  void consumer_stopped(uint64_t mask);
  // When traffic last moved on any shard of `mask`.
  uint64_t last_traffic(uint64_t mask) const;
  // Frames sent and received over all the interface's engines (their
  // tokens or the interface lock held, for a consistent pair).
  struct Frames {
    uint64_t tx = 0, rx = 0;
  };
  Frames frames() const;
  uint64_t all_shards() const { return shards.size() >= 64 ? ~0ull : (1ull << shards.size()) - 1; }
  // CM timers due at (0: at the next progress); lowered by the data path when
  // a failed completion may mean a broken connection.
  std::atomic<uint64_t> next_housekeeping{0};
  // CNO agent upcalls running now (run_upcalls), on any thread: freeing a
  // CNO (dat_cno_free, dat_ia_close) waits for them, so the agent's
  // instance is not in use once the call returns (wait_upcalls).
  std::atomic<uint32_t> upcalls_running{0};
  // Caller holds no interface lock: returns once no upcall of this
  // interface runs, except when called from an upcall (it would wait for
  // itself).
  void wait_upcalls() const;
  uint32_t evd_count = 0;  // EVDs and PZs that exist (Limits::max_evds / max_pzs)
  uint32_t pz_count = 0;
  uint32_t pending_crs = 0;   // CRs not yet answered (Limits::max_pending_crs)
  uint64_t reqs_refused = 0;  // REQs rejected for a pending-CR limit
  // Pending CRs by the requester's IPv4 address (Limits::max_pending_crs_per_peer).
  std::unordered_map<uint32_t, uint32_t> pending_by_peer;
  // Remote keys refused to connections of an address, in the window that
  // began at `since` (Limits::max_key_refusals_per_peer); windows that ended
  // are dropped by cm_timers.
  struct KeyRefusals {
    uint64_t since = 0;
    uint32_t count = 0;
  };
  std::unordered_map<uint32_t, KeyRefusals> key_refusals_by_peer;
  void note_key_refusals(uint32_t ip, uint64_t n, uint64_t now);
  // Adds the keys ep's queue pair refused since the last call to its peer's count.
  void count_key_refusals(Ep* ep, uint64_t now);
  bool key_refusals_capped(uint32_t ip, uint64_t now) const;
  // (expiry time, passive key) in time order: cm_timers drops expired records.
  std::deque<std::pair<uint64_t, uint64_t>> passive_expiry;
  // Connections freed lately, by our communication ID: a DREQ the peer
  // repeats for one (our DREP was lost) is told from a forged one.
  struct ClosedConn {
    uint32_t remote_comm = 0;
    uint32_t peer_ip = 0;
    uint64_t expires = 0;
  };
  std::unordered_map<uint32_t, ClosedConn> closed_conns;
  std::deque<std::pair<uint64_t, uint32_t>> closed_expiry;  // (expiry, comm ID) in time order
  uint32_t next_pz = 1;
  uint32_t next_comm = 1;
  uint64_t rng = 0;
  uint32_t ias = 0;
  // The IAs that asked to be told of the link's changes (ia_link_events),
  // and the link's state as last polled (-1: not yet) and when it is polled
  // next (cm_timers).
  std::vector<Ia*> link_watchers;
  int8_t link_state = -1;
  uint64_t next_link_poll = 0;
  bool threads_running = false;  // the shards' progress threads (threads_mu)

  // Opens (first use) or returns the process's interface for this IA name.
  static Status get(const IfaceConfig& cfg, Iface** out, std::string* why);

  // Drives the shards of `mask` once each whose token is free (the data
  // path: no wait).  The control work that falls due (CM messages and
  // timers) is done too when shard 0 is among them and the interface mutex
  // and the other tokens are free, else left to the next caller.  consumer:
  // called on behalf of a consumer (post, poll, wait).  Returns true when
  // anything moved.
  bool drive(uint64_t now, bool consumer, uint64_t mask = ~0ull);
  bool drive_shard(Shard& s, uint64_t now, bool consumer);

  // All below: caller holds mu and every token (IfaceLock) unless noted.
  // One progress step of every shard: hand-offs, engine poll, CM messages,
  // completions to EVDs, CM timers.  Returns true when anything moved.
  bool progress(uint64_t now, bool consumer);
  // s's token held.  The data part of a step of s; the CM part when s is
  // shard 0 and `ctl` (mu and every token held) or it can take them now.
  bool step(Shard& s, uint64_t now, bool ctl);
  // s's token held: gives the handed-off work requests to their queue pairs.
  bool drain_handoff(Shard& s);
  bool drain_handoff_all(Shard& s);
  // The EP's shard's token held: a send straight into the EP's queue pair,
  // behind what was handed off before it (kQueueFull while some of that
  // cannot go yet).
  rc::PostResult post_send_now(Ep* ep, const rc::SendWr& wr);
  // The EP's shard's token held, nothing handed off left: one request (send
  // or receive) into the EP's queue pair, counted for the hand-off's
  // accounting.
  rc::PostResult post_into_qp(Ep* ep, const rc::SendWr* swr, const rc::RecvWr* rwr);
  // The CM work (messages received, timers) with mu and every token held.
  // True when CM messages were handled (timers alone are not traffic).
  bool control_step(uint64_t now);
  bool control_due(uint64_t now) const {
    return cm_pending.load(std::memory_order_relaxed) != 0 ||
           now >= next_housekeeping.load(std::memory_order_relaxed);
  }
  // Whether a consumer that does not drive shard 0 takes it up for the
  // control work: when it is due and the last try for every token (which
  // takes them from their drivers for a moment) is kControlRetryNs past.
  // Without the pause, every consumer of an interface with several engines
  // would try at every step while one of them held its token.
  bool control_wanted(uint64_t now) const {
    return control_due(now) && now >= shards[0]->control_retry_ns.load(std::memory_order_relaxed);
  }
  // Housekeeping kControlJoinNs late, or CM messages waiting: the step that
  // takes it up waits for the tokens instead of trying for them.
  bool control_late(uint64_t now) const {
    if (cm_pending.load(std::memory_order_relaxed) != 0) return true;
    const uint64_t due = next_housekeeping.load(std::memory_order_relaxed);
    return now >= due && now - due >= kControlJoinNs;
  }
  void housekeep_by(uint64_t t) {
    uint64_t cur = next_housekeeping.load(std::memory_order_relaxed);
    while (t < cur && !next_housekeeping.compare_exchange_weak(cur, t)) {
    }
  }
  // A token held (the producer's shard's, or all of them).  Several shards
  // may deliver to one EVD at once: its event queue takes them in turn.
  void deliver(Evd* evd, Event&& ev);
  uint32_t random32();

  // connection manager (cm.cpp)
  // Engine's GSI handler (token held): decodes the MAD into cm_in.
  void on_gsi(const wire::PacketView& v, uint64_t now);
  // Handles the queued MADs (mu and token held).
  void process_cm_in(uint64_t now);
  void on_cm(const CmIn& in, uint64_t now);
  Status connect(Ep* ep, uint32_t ip, uint64_t conn_qual, uint64_t timeout_us, const uint8_t* pdata,
                 uint32_t pdata_len);
  Status accept(Cr* cr, Ep* ep, const uint8_t* pdata, uint32_t pdata_len);
  Status reject(Cr* cr, const uint8_t* pdata, uint32_t pdata_len);
  Status disconnect(Ep* ep, bool abrupt);
  // A CM-only EP whose REP came (kRepRcvd): the RTU goes, the EP is
  // CONNECTED (the peer gets ESTABLISHED; this side no event).
  Status establish(Ep* ep);
  void cm_timers(uint64_t now);
  void drop_ep(Ep* ep);  // forget an EP in every CM table (EP freed / reset)
  // Whether a DREQ in pending_dreqs with this communication ID still waits.
  bool dreq_pending(uint32_t comm) const;
  void drop_cr(Cr* cr);

  // SRQ watermark notifications (srq.cpp).
  // Those on shard `only` (its token held), or all (every token held).
  void check_srqs(const Shard* only = nullptr);
  // Delivers an asynchronous event about `handle` to the IA's async EVD.
  void async_event(Ia* ia, EventNum n, Object* handle, uint32_t reason);

  // EP queue pair management.  make_qp places the EP on a shard: an EP of an
  // SRQ on the SRQ's (its queue is the engine's); otherwise the shard whose
  // CPU (IfaceConfig::cpus) the calling thread is pinned to (that CPU
  // alone), else the one with the
  // fewest EPs (the lowest index among equals), so that EPs created in turn
  // on two processes sit on engines of the same index and a link that maps
  // queue i to queue i (net_memif, net_ring) carries each connection on one
  // queue both ways.
  // `where`: on that shard instead (rehome_qp).
  Status make_qp(Ep* ep, Shard* where = nullptr);
  void destroy_qp(Ep* ep);
  // Moves the queue pair of an EP that has sent nothing and is not connected
  // yet to shard `to`: a new queue pair there takes the receives posted so
  // far, in order, and the old one goes.  False (nothing changed) when that
  // cannot be done: an SRQ EP, a request still in the old engine's hand-off
  // queue, or no resources for the new queue pair.  Every token held.
  bool rehome_qp(Ep* ep, Shard& to);
  // Connects the EP's queue pair to the peer's (`peer_qpn` at `peer_mac`,
  // `peer_ip`) with path MTU `path_pmtu`: it sends from `sq_psn` and
  // expects `rq_psn`.  False when the queue pair refuses (not in RESET, or a
  // bad MTU).  Every token held.
  bool connect_qp(Ep* ep, const wire::MacAddr& peer_mac, uint32_t peer_ip, uint32_t peer_qpn,
                  uint32_t path_pmtu, wire::Psn sq_psn, wire::Psn rq_psn);
  Shard& pick_shard(const Ep* ep) const;
  // The completion queue of `evd` that shard s's queue pairs feed (made on
  // first use: mu and every token held).
  rc::CompletionQueue* cq_for(Evd* evd, Shard& s);

  // Progress threads (progress.cpp): started with the first IA of the
  // interface, stopped and joined when its last IA closes (mu held; the
  // tokens not held: a thread finishing its step needs its own).
  void start_threads();
  void stop_threads_if_unused();
  std::mutex threads_mu;  // start / stop of the progress threads

  // The EP's completions still queued by QPN in the engine go to its EVDs
  // (dropped when the EP is being freed); every token held.  Before its
  // queue pair goes, and for ep_settle.
  void settle_completions(Ep* ep);

 private:
  bool drain_cq(Shard& s, Evd* evd);
  // The event for RC completion `c` of `ep` on `evd` (a bind's also moves
  // its RMR's FIFO of pending binds on).
  Event cq_event(Evd* evd, const rc::Completion& c, Ep* ep);
  void report_overflow(Evd* evd);
  // `rej_reason`: the peer's REJ reason (IBA), when a REJ ended the attempt.
  void conn_event(Ep* ep, EventNum n, const uint8_t* pdata, uint32_t len, uint32_t rej_reason = 0);
  void finish_disconnect(Ep* ep, EventNum n, const uint8_t* pdata = nullptr, uint32_t len = 0,
                         uint32_t rej_reason = 0);
  void send_cm(const wire::MacAddr& mac, uint32_t ip, const wire::CmMessage& m);
  void send_rej(const wire::MacAddr& mac, uint32_t ip, const wire::CmMessage& req,
                wire::CmRejReason why, const uint8_t* pdata, uint32_t len);
  // A CM-only EP leaves before its RTU: the REP it got is rejected.
  void send_rej_rep(const Ep* ep);
  void on_req(const wire::CmMessage& m, const wire::MacAddr& mac, uint32_t ip, uint16_t port,
              uint64_t now);
  void on_rep(const wire::CmMessage& m, uint64_t now);
  void on_rtu(const wire::CmMessage& m);
  void on_rej(const wire::CmMessage& m);
  void on_dreq(const wire::CmMessage& m, const wire::MacAddr& mac, uint32_t ip);
  void on_drep(const wire::CmMessage& m);
  // The EP's DREQ, as every path that ends a connection sends it.
  wire::CmMessage dreq_of(const Ep& ep) const;
  // Builds and sends the EP's DREQ (retransmitted from then on: kDreqSent).
  void send_dreq(Ep* ep, uint64_t now);
  // (Re)sends the EP's out_msg (REQ, REP or DREQ) and backs its timer off.
  void send_out(Ep* ep, uint64_t now);
  // Moves the EP's DREQ (sent, unanswered) to pending_dreqs.
  void keep_dreq(const Ep* ep);
  void pending_dreq_timers(uint64_t now, uint64_t* next);
};

// CNO agent upcalls (DAT_OS_WAIT_PROXY_AGENT).  An agent may call back into
// DAT (typically dat_evd_dequeue on the EVD it is told about), so it never
// runs under an interface lock: Iface::deliver() queues the upcall on the
// delivering thread, and that thread makes it once it holds no interface
// lock any more (IfaceLock releases; the progress paths likewise), in
// delivery order.  The CNO may be freed, or given another agent, meanwhile:
// the upcall looks the CNO handle up again and calls the agent the CNO has
// then, or nothing when the CNO is gone.  The EVD handle given to the agent
// is only a handle: one freed meanwhile is refused as DAT_INVALID_HANDLE.
void queue_upcall(Iface* f, Cno* cno, Evd* evd);
// Makes this thread's queued upcalls; nothing while it holds an interface
// lock or is already making them (an agent's own calls into DAT: the outer
// loop makes what they queue, after the agent returns).
void run_upcalls();
void note_iface_locked();
void note_iface_unlocked();

// The control path's lock: the interface mutex, then every shard's engine
// token in index order (BasicLockable, so condition_variable_any waits on it,
// releasing them all).
// Counts the interface locks this thread holds and makes the queued agent
// upcalls when the last one is released.
class IfaceLock {
 public:
  explicit IfaceLock(Iface* f) : f_(f) { lock(); }
  IfaceLock(const IfaceLock&) = delete;
  IfaceLock& operator=(const IfaceLock&) = delete;
  ~IfaceLock() {
    if (owns_) unlock();
  }
  void lock() {
    f_->mu.lock();
    for (auto& s : f_->shards) s->token.lock();
    owns_ = true;
    note_iface_locked();
  }
  void unlock() {
    owns_ = false;
    for (auto it = f_->shards.rbegin(); it != f_->shards.rend(); ++it) (*it)->token.unlock();
    f_->mu.unlock();
    note_iface_unlocked();
    run_upcalls();
  }
  bool owns_lock() const { return owns_; }

 private:
  Iface* f_;
  bool owns_ = false;
};

// Drives every other interface of the process once (try-lock: an interface
// some other thread is driving is skipped).  For waits on one interface of
// an in-process pair whose peer must move too.
void progress_others(Iface* except);

// Whether the process has an interface without a progress thread (its
// waiters then drive the others: an in-process peer may be inline).
bool any_inline_iface();

// Translates an RC completion status to the DAT DTO status.
DtoStatus dto_status(rc::WcStatus s);

}  // namespace dpdat::dat
