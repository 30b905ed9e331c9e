// Interfaces (link + memory tables + engine), the handle registry, inline
// and background progress, and completion delivery to EVDs.

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "core.hpp"
#include "link.hpp"

namespace dpdat::dat {

// ------------------------------------------------------------ handle registry

namespace {
std::shared_mutex g_handles_mu;
std::unordered_set<const void*>& handles() {
  static auto* h = new std::unordered_set<const void*>();  // lives for the process
  return *h;
}
}  // namespace

void register_handle(Object* o) {
  // DAT 2.0: every object carries its IA's provider word from birth (the
  // IA's own is set by the plug-in once the IA is open; nullptr for 1.2).
  if (o->ia != nullptr && o->ia != o) o->provider = o->ia->provider;
  std::unique_lock lk(g_handles_mu);
  handles().insert(o);
}
void unregister_handle(Object* o) {
  std::unique_lock lk(g_handles_mu);
  handles().erase(o);
}
Object* lookup_any(const void* h) {
  if (h == nullptr) return nullptr;
  std::shared_lock lk(g_handles_mu);
  if (handles().count(h) == 0) return nullptr;
  return static_cast<Object*>(const_cast<void*>(h));
}

// ------------------------------------------------------------ agent upcalls

namespace {
struct Upcall {
  Iface* f;
  Cno* cno;
  Evd* evd;
};
thread_local std::deque<Upcall> t_upcalls;
thread_local int t_iface_locks = 0;  // interface locks this thread holds (IfaceLock)
thread_local bool t_running_upcalls = false;
}  // namespace

void note_iface_locked() { ++t_iface_locks; }
void note_iface_unlocked() { --t_iface_locks; }

void queue_upcall(Iface* f, Cno* cno, Evd* evd) { t_upcalls.push_back(Upcall{f, cno, evd}); }

void run_upcalls() {
  if (t_iface_locks > 0 || t_running_upcalls || t_upcalls.empty()) return;
  t_running_upcalls = true;
  while (!t_upcalls.empty()) {
    const Upcall u = t_upcalls.front();
    t_upcalls.pop_front();
    void (*fn)(void*, void*) = nullptr;
    void* instance = nullptr;
    {
      // Not an IfaceLock: this thread is making upcalls already.
      std::lock_guard<std::mutex> g(u.f->mu);  // the CNO's agent fields change under mu
      if (Cno* c = lookup<Cno>(u.cno, HandleType::kCno); c != nullptr) {
        fn = c->agent_fn;
        instance = c->agent_instance;
      }
    }
    if (fn != nullptr) fn(instance, u.evd);
  }
  t_running_upcalls = false;
}

DtoStatus dto_status(rc::WcStatus s) {
  switch (s) {
    case rc::WcStatus::kSuccess:
      return DtoStatus::kSuccess;
    case rc::WcStatus::kLocalLengthError:
      return DtoStatus::kLocalLength;
    case rc::WcStatus::kLocalProtectionError:
      return DtoStatus::kLocalProtection;
    case rc::WcStatus::kLocalQpOperationError:
      return DtoStatus::kLocalEp;
    case rc::WcStatus::kBindError:
      return DtoStatus::kRmrOperationFailed;
    case rc::WcStatus::kRemoteAccessError:
      return DtoStatus::kRemoteAccess;
    case rc::WcStatus::kRemoteInvalidRequest:
      return DtoStatus::kRemoteResponder;
    case rc::WcStatus::kRemoteOperationalError:
      return DtoStatus::kRemoteResponder;
    case rc::WcStatus::kRetryExceeded:
      return DtoStatus::kTransport;
    case rc::WcStatus::kRnrRetryExceeded:
      return DtoStatus::kReceiverNotReady;
    case rc::WcStatus::kFlushed:
      return DtoStatus::kFlushed;
    case rc::WcStatus::kCount:
      break;
  }
  return DtoStatus::kTransport;
}

// ------------------------------------------------------------- interfaces

namespace {

std::mutex g_ifaces_mu;
std::vector<Iface*>& ifaces() {
  static auto* v = new std::vector<Iface*>();  // interfaces live for the process (EAL does)
  return *v;
}
std::atomic<size_t> g_iface_count{0};
std::atomic<size_t> g_inline_ifaces{0};

}  // namespace

Status Iface::get(const IfaceConfig& cfg, Iface** out, std::string* why) {
  std::lock_guard<std::mutex> lk(g_ifaces_mu);
  for (Iface* f : ifaces())
    if (f->cfg.name == cfg.name) {
      *out = f;
      return kOk;
    }
  const LinkFactory* lf = link_factory();
  if (lf == nullptr) {
    *why = "no link factory installed in this process";
    return fail(Type::PROVIDER_NOT_FOUND);
  }
  auto f = std::make_unique<Iface>();
  f->cfg = cfg;
  LinkError le = LinkError::kNone;
  f->link = lf->open(cfg, &le, why);
  if (!f->link)
    return le == LinkError::kNotFound ? fail(Type::PROVIDER_NOT_FOUND)
                                      : fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_DEVICE);
  f->cm_drops = cfg.cm_drops;
  for (const auto& [ip, mac] : cfg.neighbors) f->link->add_neighbor(ip, mac);
  if (cfg.pmtu_given && cfg.pmtu > f->link->max_pmtu()) {
    // A path MTU asked for by name is carried whole or refused: frames are
    // never cut to fit, and a smaller PMTU than asked is not chosen silently.
    const std::string note = f->link->mtu_note();
    *why = "pmtu=" + std::to_string(cfg.pmtu) + ": the link carries at most PMTU " +
           std::to_string(f->link->max_pmtu()) + (note.empty() ? "" : " (" + note + ")");
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG1);
  }
  f->pmtu = std::min(cfg.pmtu, f->link->max_pmtu());
  Limits& L = f->limits;
  for (auto [set, field] : {std::pair{cfg.max_eps, &L.max_eps},
                            {cfg.max_lmrs, &L.max_lmrs},
                            {cfg.max_rmrs, &L.max_rmrs},
                            {cfg.max_evds, &L.max_evds},
                            {cfg.max_pzs, &L.max_pzs},
                            {cfg.max_pending_crs, &L.max_pending_crs},
                            {cfg.max_pending_crs_per_sp, &L.max_pending_crs_per_sp},
                            {cfg.max_pending_crs_per_peer, &L.max_pending_crs_per_peer}})
    if (set != 0) *field = set;
  f->mr = std::make_unique<rc::MrTable>(f->limits.max_lmrs, f->limits.max_rmrs);
  rc::EngineConfig ec;
  ec.max_qps = f->limits.max_eps;
  ec.pmtu = f->pmtu;
  f->engine = std::make_unique<rc::Engine>(f->link->io(), *f->mr, ec);
  Iface* raw = f.get();
  f->cm_in.reserve(64);
  f->engine->set_gsi_handler(
      [raw](const wire::PacketView& v, uint64_t now) { raw->on_gsi(v, now); });
  f->link->engine_created(*f->engine);
  f->rng = now_ns() ^ (uint64_t{cfg.ip} << 32) ^ 0x9E3779B97F4A7C15ull;
  f->next_comm = f->random32() | 1u;
  ifaces().push_back(f.release());
  g_iface_count.store(ifaces().size(), std::memory_order_release);
  if (cfg.progress == ProgressMode::kInline) g_inline_ifaces.fetch_add(1);
  start_progress(raw);
  *out = raw;
  return kOk;
}

bool any_inline_iface() { return g_inline_ifaces.load(std::memory_order_relaxed) != 0; }

void progress_others(Iface* except) {
  const size_t n = g_iface_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    Iface* f = nullptr;
    {
      std::lock_guard<std::mutex> lk(g_ifaces_mu);
      f = ifaces()[i];
    }
    if (f != except) f->drive(now_ns(), true);
  }
}

uint32_t Iface::random32() {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return static_cast<uint32_t>(rng >> 16);
}

bool Iface::drive(uint64_t now, bool consumer) {
  if (consumer) last_consumer_progress.store(now, std::memory_order_relaxed);
  bool moved = false;
  // A work request handed off while the holder was finishing its step is
  // taken by the next try (the holder checks after releasing, as the poster
  // tries after publishing: one of the two sees the other).
  for (int round = 0; round < 2; ++round) {
    if (!token.try_lock()) break;
    moved |= step(now, false);
    token.unlock();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!handoff.pending()) break;
  }
  run_upcalls();
  return moved;
}

bool Iface::progress(uint64_t now, bool consumer) {
  if (consumer) last_consumer_progress.store(now, std::memory_order_relaxed);
  return step(now, true);
}

bool Iface::step(uint64_t now, bool have_mu) {
  bool moved = drain_handoff();
  moved |= engine->poll(now) != 0;
  // The CM runs under mu, which the token holder only tries (the control
  // path takes mu before the token).
  bool locked_here = false;
  if (!have_mu && (!cm_in.empty() || now >= next_housekeeping.load(std::memory_order_relaxed))) {
    locked_here = mu.try_lock();
    if (locked_here) note_iface_locked();
  }
  const bool ctl = have_mu || locked_here;
  bool cm_ran = false;
  if (ctl && !cm_in.empty()) {
    process_cm_in(now);
    moved = cm_ran = true;
  }
  // Completions wait while CM messages of the same burst do, so that a
  // connection's events come before the completions that follow them.
  if (ctl || cm_in.empty()) {
    if (!srqs.empty()) check_srqs();
    ready_pass.swap(ready_cqs);
    for (rc::CompletionQueue* cq : ready_pass) {
      cq->unlisted();
      moved |= drain_cq(static_cast<Evd*>(cq->owner()));
      if (!cq->empty()) cq->relist();  // its EVD is full: again next step
    }
    ready_pass.clear();
    rc::Completion c;
    while (sink_cq.pop(&c)) moved = true;  // EPs without an EVD for this stream
  }
  if (ctl && now >= next_housekeeping.load(std::memory_order_relaxed)) {
    cm_timers(now);
    cm_ran = true;
  }
  // CM replies (an RTU, a DREP) and timer resends leave now: with inline
  // progress the consumer may not drive the interface again for a long time
  // (it returned from dat_evd_wait with its CONNECTED event), and the peer
  // waits for them.
  if (cm_ran) engine->flush();
  if (locked_here) {
    mu.unlock();
    note_iface_unlocked();
  }
  if (moved) last_traffic.store(now, std::memory_order_relaxed);
  return moved;
}

// A handed-off request the queue pair refused after ep_post accepted it
// (the connection broke meanwhile): it completes as flushed (QP in error) or
// as a local EP error, in order; false while the completion queue is full.
bool Iface::drain_handoff() {
  bool did = false;
  while (Handoff* h = handoff.front()) {
    Ep* ep = h->ep;
    if (h->qp == nullptr) {  // its queue pair was destroyed meanwhile
      handoff.pop_front();
      continue;
    }
    const rc::Qp::PostResult r = h->is_send ? h->qp->post_send(h->send) : h->qp->post_recv(h->recv);
    if (r == rc::Qp::PostResult::kQueueFull) break;  // after progress, in order
    if (r != rc::Qp::PostResult::kOk) {
      rc::Completion c;
      c.cookie = h->is_send ? h->send.cookie : h->recv.cookie;
      c.qpn = h->qp->qpn();
      c.op = h->is_send ? rc::wc_op_of(h->send.op) : rc::WcOp::kRecv;
      c.status = h->qp->state() == rc::QpState::kError ? rc::WcStatus::kFlushed
                                                       : rc::WcStatus::kLocalQpOperationError;
      Evd* evd = h->is_send ? ep->req_evd : ep->recv_evd;
      rc::CompletionQueue* cq = evd != nullptr ? evd->cq.get() : &sink_cq;
      if (!cq->push(c)) break;  // full: the consumer makes room first
    }
    (h->is_send ? ep->sends_into_qp : ep->recvs_into_qp)++;
    handoff.pop_front();
    did = true;
  }
  return did;
}

// Gives the handed-off requests to their queue pairs; false when some are
// left: one stalls on a full queue, or its poster has claimed its slot and
// not yet written it (that takes nanoseconds unless the poster is
// preempted: waited for, 10 ms at most).
bool Iface::drain_handoff_all() {
  const uint64_t give_up = now_ns() + 10'000'000;
  for (uint32_t spins = 0;; ++spins) {
    drain_handoff();
    if (!handoff.pending()) return true;
    if (handoff.front() != nullptr || now_ns() >= give_up) return false;  // stalled
    if (spins < 64) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

rc::Qp::PostResult Iface::post_send_now(Ep* ep, const rc::SendWr& wr) {
  // Never past older requests: with some left, report a full queue.
  if (!drain_handoff_all()) return rc::Qp::PostResult::kQueueFull;
  return post_into_qp(ep, &wr, nullptr);
}

rc::Qp::PostResult Iface::post_into_qp(Ep* ep, const rc::SendWr* swr, const rc::RecvWr* rwr) {
  const rc::Qp::PostResult r = swr != nullptr ? ep->qp->post_send(*swr) : ep->qp->post_recv(*rwr);
  if (r == rc::Qp::PostResult::kOk) {
    (swr != nullptr ? ep->sends_into_qp : ep->recvs_into_qp)++;
    (swr != nullptr ? ep->sends_posted : ep->recvs_posted).fetch_add(1, std::memory_order_relaxed);
  }
  return r;
}

void Iface::unwatch_cq(rc::CompletionQueue* cq) {
  std::erase(ready_cqs, cq);
  std::erase(ready_pass, cq);
}

// Moves completions from the EVD's RC completion queue into its event queue
// while there is room; a full EVD leaves them in the RC queue, where the
// queue pairs stall (nothing is dropped) and an overflow is reported.
bool Iface::drain_cq(Evd* evd) {
  bool moved = false;
  rc::Completion c;
  while (evd->q.size() < evd->qlen) {
    if (!evd->cq->pop(&c)) return moved;
    moved = true;
    auto it = ep_by_qpn.find(c.qpn);
    Ep* ep = it == ep_by_qpn.end() ? nullptr : it->second;
    if (ep != nullptr && ep->qp != nullptr) {
      // What the queue pair retired, for posters that hand off (ep_post):
      // published before the completion can be seen.
      if (c.op == rc::WcOp::kRecv || c.op == rc::WcOp::kRecvWriteImm) {
        ep->recvs_retired.store(ep->recvs_into_qp - ep->qp->recv_queue_used(),
                                std::memory_order_release);
      } else {
        ep->sends_retired.store(ep->sends_into_qp - ep->qp->send_queue_used(),
                                std::memory_order_release);
      }
    }
    deliver(evd, cq_event(evd, c, ep));
    // A failed DTO may mean the connection broke: the housekeeping pass
    // turns a queue pair in error into BROKEN.
    if (c.status != rc::WcStatus::kSuccess && ep != nullptr)
      next_housekeeping.store(0, std::memory_order_relaxed);
  }
  if (!evd->cq->empty()) report_overflow(evd);
  return moved;
}

Event Iface::cq_event(Evd* evd, const rc::Completion& c, Ep* ep) {
  Event ev;
  ev.evd = evd;
  ev.ep = ep;
  ev.cookie = c.cookie;
  ev.status = dto_status(c.status);
  ev.length = c.byte_len;
  ev.op = c.op;
  ev.imm = c.imm;
  ev.has_imm = c.has_imm;
  if (c.op == rc::WcOp::kBind) {
    ev.num = EventNum::kRmrBind;
    ev.rmr_context = c.rkey;
    // A bind's RC cookie is its Rmr; the consumer's cookie waits in the
    // Rmr's FIFO of pending binds (binds of one RMR complete in order).
    Rmr* rmr = lookup<Rmr>(reinterpret_cast<const void*>(static_cast<uintptr_t>(c.cookie)),
                           HandleType::kRmr);
    ev.rmr = rmr;
    ev.cookie = 0;
    if (rmr != nullptr && !rmr->binds.empty()) {
      const Rmr::PendingBind b = rmr->binds.front();
      rmr->binds.pop_front();
      ev.cookie = b.cookie;
      if (c.status == rc::WcStatus::kSuccess) {
        rmr->lmr = b.length == 0 ? nullptr : b.lmr;
        rmr->va = b.va;
        rmr->length = b.length;
        rmr->privileges = b.privileges;
      }
    }
  } else {
    ev.num = EventNum::kDto;
  }
  return ev;
}

// The completions of the EP's queue pair that are still in its EVDs' RC
// completion queues name it only by QPN, which the next queue pair created
// may take over: they are settled while the QPN still means this EP.  An
// EP that stays (reset, modify) gets them as events (past the EVD's length
// if need be: they are in the overflow list, as deliver() keeps them); an EP
// being freed loses them, together with its DTO and RMR bind events not yet
// dequeued (dat_ep_free(3DAT): "the Consumer must be ready for all
// completions that are not dequeued yet either still being on the Endpoint
// recv_evd_handle and request_evd_handle or not being there"), so no
// completion of a freed EP is ever reported (with its handle, which a new EP
// may reuse, or with another EP's).  The RC queues are popped and refilled
// here, which is safe because the engine only runs under `mu` (this
// interface drives it inline: no other producer).
void Iface::settle_completions(Ep* ep) {
  const uint32_t qpn = ep->qp->qpn();
  Evd* const evds[2] = {ep->recv_evd, ep->req_evd != ep->recv_evd ? ep->req_evd : nullptr};
  for (Evd* evd : evds) {
    if (evd == nullptr || !evd->cq) continue;
    std::vector<rc::Completion> others;
    std::vector<rc::Completion> mine;
    rc::Completion c;
    while (evd->cq->pop(&c)) (c.qpn == qpn ? mine : others).push_back(c);
    for (const rc::Completion& x : others) (void)evd->cq->push(x);  // same room as before
    for (const rc::Completion& x : mine) {
      Event ev = cq_event(evd, x, ep);  // a bind's RMR FIFO moves on either way
      if (!ep->freeing) deliver(evd, std::move(ev));
    }
    if (ep->freeing) {
      evd->q.erase_if([ep](const Event& e) {
        return e.ep == ep && (e.num == EventNum::kDto || e.num == EventNum::kRmrBind);
      });
    }
  }
}

// Tells the IA's async EVD, once per EVD, that events are waiting for room.
void Iface::report_overflow(Evd* evd) {
  if (evd->overflow_reported.exchange(true)) return;
  Evd* async = evd->ia->async_evd;
  if (async == nullptr || async == evd) return;
  async_event(evd->ia, EventNum::kEvdOverflow, evd, kEvdOverflowReason);
}

void Iface::deliver(Evd* evd, Event&& ev) {
  if (!evd->q.push(std::move(ev))) report_overflow(evd);  // kept in order, past qlen
  // Pairs with the fence of a waiter between raising `waiter` and looking at
  // the queue: either it sees this event or this sees it waiting.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (evd->waiter.load(std::memory_order_relaxed)) {
    if (evd->q.size() >= evd->threshold.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> g(evd->wait_mu);
      evd->wait_cv.notify_all();
    }
  } else if (evd->cno != nullptr && evd->enabled.load(std::memory_order_relaxed)) {
    Cno* cno = evd->cno;
    cno->triggered.store(evd);
    cno->cv.notify_all();
    if (cno->agent_fn != nullptr) queue_upcall(this, cno, evd);  // made once mu is released
  }
}

Status Iface::make_qp(Ep* ep) {
  rc::QpConfig qc;
  qc.sq_depth = std::max(ep->attr.max_request_dtos, 1u) + 1;
  // With an SRQ the QP's own queue only holds the receive of the message in
  // progress.
  qc.rq_depth = ep->srq != nullptr ? 2 : std::max(ep->attr.max_recv_dtos, 1u);
  qc.pmtu = pmtu;
  qc.selective_repeat = !cfg.gbn;
  qc.max_rd_atomic = std::max(1u, ep->attr.max_rdma_read_out);
  // A dead peer is declared after 7 retries and at least 1 s (a peer process
  // starved of CPU for a few hundred ms is not dead).
  qc.min_retry_time_ns = 1'000'000'000;
  qc.cc.mode = cfg.cc;
  qc.cc.line_rate_bps = uint64_t{cfg.cc_line_gbps} * 1'000'000'000;
  rc::CompletionQueue* scq = ep->req_evd != nullptr ? ep->req_evd->cq.get() : &sink_cq;
  rc::CompletionQueue* rcq = ep->recv_evd != nullptr ? ep->recv_evd->cq.get() : &sink_cq;
  ep->qp = engine->create_qp(ep->pz->id, qc, scq, rcq);
  if (ep->qp == nullptr) return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
  if (ep->srq != nullptr) (void)ep->qp->attach_srq(ep->srq->rq.get());  // new QP: in RESET
  ep_by_qpn[ep->qp->qpn()] = ep;
  return kOk;
}

void Iface::destroy_qp(Ep* ep) {
  if (ep->qp == nullptr) return;
  // Requests handed off for it reach it first (and are flushed with it);
  // those that cannot (a full queue) go with it.
  drain_handoff();
  handoff.for_each([ep](Handoff& h) {
    if (h.ep == ep) h.qp = nullptr;
  });
  settle_completions(ep);
  ep_by_qpn.erase(ep->qp->qpn());
  engine->destroy_qp(ep->qp);
  ep->qp = nullptr;
  // Everything it held is settled: a later queue pair starts from a full
  // send / receive queue on these counts.
  ep->sends_into_qp = ep->recvs_into_qp = 0;
  ep->sends_posted.store(0);
  ep->sends_retired.store(0);
  ep->recvs_posted.store(0);
  ep->recvs_retired.store(0);
}

}  // namespace dpdat::dat
