// The DAT operations shared by the uDAPL 1.2 API and the DAT 2.0 plug-in
// (see ops.hpp).

#include "ops.hpp"

#include <netinet/in.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

namespace dpdat::dat {

namespace {
// Longest dat_ia_close waits for the DREPs of its abrupt disconnects: the
// first DREQ and its repetitions 50, 100 and 200 ms later (cm.cpp).
constexpr uint64_t kCloseLingerUs = 250'000;
}  // namespace

// ------------------------------------------------------------- helpers

Sub ep_state_sub(EpState s) {
  switch (s) {
    case EpState::kUnconnected:
      return Sub::INVALID_STATE_EP_UNCONNECTED;
    case EpState::kActivePending:
      return Sub::INVALID_STATE_EP_ACTCONNPENDING;
    case EpState::kPassivePending:
      return Sub::INVALID_STATE_EP_PASSCONNPENDING;
    case EpState::kTentativePending:
      return Sub::INVALID_STATE_EP_TENTCONNPENDING;
    case EpState::kConnected:
      return Sub::INVALID_STATE_EP_CONNECTED;
    case EpState::kDisconnectPending:
      return Sub::INVALID_STATE_EP_DISCPENDING;
    case EpState::kDisconnected:
      return Sub::INVALID_STATE_EP_DISCONNECTED;
    case EpState::kReserved:
      return Sub::INVALID_STATE_EP_RESERVED;
  }
  return Sub::NO_SUBTYPE;
}

bool evd_ok(Ia* ia, const void* h, uint32_t flag, Evd** out) {
  *out = nullptr;
  if (h == nullptr) return true;
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr || e->ia->iface != ia->iface || (e->flags & flag) == 0) return false;
  *out = e;
  return true;
}

// The message and RDMA sizes and the scatter/gather counts a consumer asks
// for are minimums (0: no preference); an EP is granted the interface's
// limits, which every endpoint supports at no extra cost.  OFED's dtest asks
// for sizes 0 and 64 KiB and no RDMA segments, then writes 1 MiB from one
// segment, as its own providers allow.
static void grant_sizes(const Iface* f, EpAttr* a) {
  a->max_message_size = f->limits.max_message_size;
  a->max_rdma_size = f->limits.max_message_size;
  a->max_recv_iov = a->max_request_iov = f->limits.max_iov;
  a->max_rdma_read_iov = a->max_rdma_write_iov = f->limits.max_iov;
}

Status check_ep_attr(const Iface* f, const EpAttr& a) {
  const Limits& L = f->limits;
  if (a.max_recv_dtos > L.max_dto_per_ep || a.max_request_dtos > L.max_dto_per_ep)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  if (a.max_recv_iov > L.max_iov || a.max_request_iov > L.max_iov)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  if (a.max_message_size > L.max_message_size || a.max_rdma_size > L.max_message_size)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  if (a.max_rdma_read_in > L.max_rdma_read_per_ep || a.max_rdma_read_out > L.max_rdma_read_per_ep)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  return kOk;
}

bool pop_event(Evd* evd, Event* out) {
  if (!evd->q.pop(out)) return false;
  // Connection events' private data stays valid until the next dequeue of
  // such an event here (DTO events carry none and leave it alone).
  if (out->pdata_buf) {
    std::lock_guard<std::mutex> g(evd->wait_mu);
    evd->dequeued_pdata = out->pdata_buf;
  }
  return true;
}

Status make_evd(Ia* ia, int64_t qlen, Cno* cno, uint32_t flags, Evd** out) {
  Iface* f = ia->iface;
  if (qlen <= 0 || static_cast<uint64_t>(qlen) > f->limits.max_evd_qlen)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (flags == 0 || (flags & ~0x1F1u) != 0) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  auto* e = new Evd(ia);
  e->qlen = static_cast<uint32_t>(qlen);
  (void)e->q.resize(e->qlen);  // empty: always fits
  e->flags = flags;
  e->cno = cno;
  if (cno != nullptr) cno->evds++;
  if ((flags & (evd_flag::kDto | evd_flag::kRmrBind)) != 0) {
    e->cq = std::make_unique<rc::CompletionQueue>(e->qlen);
    f->cq_evds.push_back(e);
  }
  adopt(ia, e);
  *out = e;
  return kOk;
}

void free_evd(Evd* e) {
  Iface* f = e->ia->iface;
  if (e->cq) f->cq_evds.erase(std::find(f->cq_evds.begin(), f->cq_evds.end(), e));
  if (e->cno != nullptr) e->cno->evds--;
  // Its own IA is closing abruptly: IAs that borrowed it lose their async EVD.
  for (Ia* u : e->async_users) u->async_evd = nullptr;
  destroy(e);
}

void free_ep(Ep* ep) {
  Iface* f = ep->ia->iface;
  ep->freeing = true;
  if (ep->state == EpState::kConnected || ep->state == EpState::kPassivePending ||
      ep->state == EpState::kActivePending || ep->state == EpState::kDisconnectPending) {
    ep->conn_evd = nullptr;  // freeing: no connection event for this EP any more
    (void)f->disconnect(ep, true);
  }
  f->drop_ep(ep);
  f->destroy_qp(ep);
  srq_detach(ep);
  for (Evd* e : {ep->recv_evd, ep->req_evd, ep->conn_evd})
    if (e != nullptr) e->refs--;
  if (ep->pz != nullptr) ep->pz->refs--;
  if (ep->sp != nullptr && ep->sp->ep == ep) ep->sp->ep = nullptr;
  destroy(ep);
}

void free_sp(Sp* sp) {
  Iface* f = sp->ia->iface;
  auto it = f->listeners.find(sp->conn_qual);
  if (it != f->listeners.end() && it->second == sp) f->listeners.erase(it);
  for (Object* o : sp->ia->children)
    if (o->type == HandleType::kCr && static_cast<Cr*>(o)->sp == sp)
      static_cast<Cr*>(o)->sp = nullptr;
  if (sp->ep != nullptr && sp->ep->state == EpState::kReserved)
    sp->ep->state = EpState::kUnconnected;
  if (sp->ep != nullptr && sp->ep->sp == sp) sp->ep->sp = nullptr;
  if (sp->evd != nullptr) sp->evd->refs--;
  destroy(sp);
}

Status free_lmr(Lmr* l) {
  if (l->children > 0) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_LMR_IN_USE);
  Iface* f = l->ia->iface;
  bool in_use = false;
  const auto e = f->mr->lmr_free(l->lmr_context, &in_use);
  if (in_use) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_LMR_IN_USE);
  if (e != rc::AccessError::kOk) return fail(Type::INTERNAL_ERROR);
  f->lmr_by_ctx.erase(l->lmr_context);
  if (l->parent != nullptr) l->parent->children--;
  l->pz->refs--;
  destroy(l);
  return kOk;
}

void free_rmr(Rmr* r) {
  r->ia->iface->mr->rmr_free(r->slot);
  r->pz->refs--;
  destroy(r);
}

void free_children(Ia* ia) {
  auto of_type = [ia](HandleType t) {
    std::vector<Object*> v;
    for (Object* o : ia->children)
      if (o->type == t) v.push_back(o);
    return v;
  };
  for (Object* o : of_type(HandleType::kCr)) ia->iface->drop_cr(static_cast<Cr*>(o));
  for (HandleType t : {HandleType::kPsp, HandleType::kRsp})
    for (Object* o : of_type(t)) free_sp(static_cast<Sp*>(o));
  for (Object* o : of_type(HandleType::kEp)) free_ep(static_cast<Ep*>(o));
  for (Object* o : of_type(HandleType::kSrq)) free_srq(static_cast<Srq*>(o));  // no EP left
  for (Object* o : of_type(HandleType::kRmr)) free_rmr(static_cast<Rmr*>(o));
  // LMRs over other LMRs first.
  for (int pass = 0; pass < 2; ++pass)
    for (Object* o : of_type(HandleType::kLmr)) {
      auto* l = static_cast<Lmr*>(o);
      if (pass == 1 || l->parent != nullptr) (void)free_lmr(l);
    }
  for (Object* o : of_type(HandleType::kEvd)) free_evd(static_cast<Evd*>(o));
  for (Object* o : of_type(HandleType::kCno)) destroy(static_cast<Cno*>(o));
  for (Object* o : of_type(HandleType::kPz)) destroy(static_cast<Pz*>(o));
}

namespace {

Status request_flags(const Ep* ep, uint32_t f, uint32_t* wr_flags) {
  if ((f & ~0x0Fu) != 0) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  *wr_flags = rc::wr_flag::kSignaled;
  if ((f & cflag::kUnsignalled) != 0) {
    if ((ep->attr.request_completion_flags & cflag::kUnsignalled) == 0)
      return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
    *wr_flags = 0;
  }
  if ((f & cflag::kSuppress) != 0) *wr_flags = 0;
  if ((f & cflag::kBarrierFence) != 0) *wr_flags |= rc::wr_flag::kFence;
  if ((f & cflag::kSolicitedWait) != 0) *wr_flags |= rc::wr_flag::kSolicited;
  return kOk;
}

Status post_result(rc::Qp::PostResult r, const Ep* ep) {
  switch (r) {
    case rc::Qp::PostResult::kOk:
      return kOk;
    case rc::Qp::PostResult::kQueueFull:
      return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
    case rc::Qp::PostResult::kInvalidState:
      return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
    case rc::Qp::PostResult::kInvalidWr:
      return fail(Type::INVALID_PARAMETER);
  }
  return fail(Type::INTERNAL_ERROR);
}

// The data path of a post: straight into the queue pair when this thread
// can take the engine token (then it progresses the interface inline, so the
// request leaves now), else handed to the token's holder.  A hand-off is
// refused for a full queue on the EP's own counts of what it posted and what
// its queue pair retired (as of the completions delivered), and for a full
// hand-off ring (back-pressure).
Status submit(Iface* f, Ep* ep, bool is_send, const rc::SendWr* swr, const rc::RecvWr* rwr) {
  const uint64_t now = now_ns();
  if (f->token.try_lock()) {
    const rc::Qp::PostResult r = is_send ? f->post_send_now(ep, *swr) : f->post_recv_now(ep, *rwr);
    f->last_consumer_progress.store(now, std::memory_order_relaxed);
    if (r == rc::Qp::PostResult::kOk) f->step(now, false);
    f->token.unlock();
    run_upcalls();
    return post_result(r, ep);
  }
  rc::Qp* qp = ep->qp;
  const uint64_t cap = is_send ? qp->config().sq_depth : qp->config().rq_depth;
  std::atomic<uint64_t>& posted = is_send ? ep->sends_posted : ep->recvs_posted;
  const std::atomic<uint64_t>& retired = is_send ? ep->sends_retired : ep->recvs_retired;
  if (posted.load(std::memory_order_relaxed) - retired.load(std::memory_order_acquire) >= cap)
    return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
  Handoff h;
  h.ep = ep;
  h.qp = qp;
  h.is_send = is_send;
  if (is_send) {
    h.send = *swr;
  } else {
    h.recv = *rwr;
  }
  if (!f->handoff.push(h)) return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
  posted.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  f->drive(now, true);  // the holder may have let go meanwhile
  return kOk;
}

Status fill_sges(const Ep* ep, const rc::Sge* in, uint32_t n, uint32_t max_iov, rc::Sge* sge,
                 uint32_t* nsge, uint64_t* total) {
  if (n > max_iov || n > rc::kMaxSge) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (n > 0 && in == nullptr) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  *total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    sge[i] = in[i];
    *total += in[i].length;
  }
  *nsge = n;
  if (*total > ep->attr.max_message_size) return fail(Type::LENGTH_ERROR);
  return kOk;
}

Status sp_listen(Ia* ia, uint64_t qual, const void* evd_h, HandleType t, uint32_t flags, Ep* ep,
                 Sp** out) {
  Evd* evd = lookup<Evd>(evd_h, HandleType::kEvd);
  if (evd == nullptr || evd->ia->iface != ia->iface || (evd->flags & evd_flag::kCr) == 0)
    return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_CR);
  Iface* f = ia->iface;
  if (f->listeners.count(qual) != 0) return fail(Type::CONN_QUAL_IN_USE);
  auto* sp = new Sp(t, ia);
  sp->conn_qual = qual;
  sp->evd = evd;
  sp->flags = flags;
  sp->ep = ep;
  evd->refs++;
  f->listeners[qual] = sp;
  adopt(ia, sp);
  *out = sp;
  return kOk;
}

}  // namespace

void fill_sa(unsigned char* out, uint32_t ip) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(ip);
  static_assert(sizeof(sa) == 16);
  std::memcpy(out, &sa, sizeof(sa));
}

// ------------------------------------------------------------- IA / PZ

Status ia_open(const IfaceConfig& cfg, int64_t async_qlen, Evd* given, void* provider, Ia** out) {
  Iface* f = nullptr;
  std::string why;
  Status st = Iface::get(cfg, &f, &why);
  if (!st.ok()) return st;
  if (given == nullptr && async_qlen <= 0) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Lock lk(f);
  // A consumer's async EVD belongs to another IA of this same interface (its
  // events are delivered under this interface's lock).
  if (given != nullptr && given->ia->iface != f)
    return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_ASYNC);
  auto* ia = new Ia();
  ia->provider = provider;
  ia->iface = f;
  fill_sa(ia->local_sa, f->cfg.ip);
  register_handle(ia);
  if (given != nullptr) {
    ia->async_evd = given;
    given->refs++;  // not freed while this IA reports to it
    given->async_users.push_back(ia);
  } else {
    Evd* e = nullptr;
    st = make_evd(ia, async_qlen, nullptr, evd_flag::kAsync, &e);
    if (!st.ok()) {
      unregister_handle(ia);
      delete ia;
      return st;
    }
    ia->async_evd = e;
    ia->async_evd_created = true;
  }
  f->ias++;
  *out = ia;
  return kOk;
}

Status ia_close(Ia* ia, bool graceful) {
  Iface* f = ia->iface;
  Lock lk(f);
  if (graceful) {
    for (Object* o : ia->children)
      if (!(ia->async_evd_created && o == ia->async_evd))
        return fail(Type::INVALID_STATE, Sub::INVALID_STATE_IA_IN_USE);
  }
  if (!ia->async_evd_created && ia->async_evd != nullptr) {  // another IA's EVD
    std::erase(ia->async_evd->async_users, ia);
    ia->async_evd->refs--;
  }
  free_children(ia);
  f->ias--;
  unregister_handle(ia);
  // Linger: the DREQs of this IA's abrupt disconnects (its EPs freed just
  // now or earlier) went out behind the last ACKs of their connections.  A
  // consumer typically exits right after dat_ia_close, and with it the
  // link may go (a net_memif peer discards what it has not read yet when
  // the other process's socket closes): wait, at most kCloseLingerUs, until
  // every such DREQ is answered, which means the peer took everything sent
  // before it.  A peer that never answers costs that much, once.
  std::vector<uint32_t> waiting;
  for (PendingDreq& d : f->pending_dreqs)
    if (d.owner == ia) {
      waiting.push_back(d.comm);
      d.owner = nullptr;
    }
  delete ia;
  if (!waiting.empty()) {
    std::condition_variable_any none;  // nothing signals it: wait_for polls and backs off
    (void)wait_for(f, lk, none, kCloseLingerUs, [f, &waiting] {
      return std::none_of(waiting.begin(), waiting.end(),
                          [f](uint32_t c) { return f->dreq_pending(c); });
    });
  }
  return kOk;
}

Status pz_create(Ia* ia, Pz** out) {
  Lock lk(ia->iface);
  auto* pz = new Pz(ia);
  pz->id = ia->iface->next_pz++;
  adopt(ia, pz);
  *out = pz;
  return kOk;
}

Status pz_free(Pz* pz) {
  Lock lk(pz->ia->iface);
  if (pz->refs > 0) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_PZ_IN_USE);
  destroy(pz);
  return kOk;
}

// ------------------------------------------------------------- EVD / CNO

Status evd_create(Ia* ia, int64_t qlen, Cno* cno, uint32_t flags, Evd** out) {
  Lock lk(ia->iface);
  return make_evd(ia, qlen, cno, flags, out);
}

Status evd_modify_cno(Evd* e, Cno* cno) {
  Lock lk(e->ia->iface);
  if (e->cno != nullptr) e->cno->evds--;
  e->cno = cno;
  if (cno != nullptr) cno->evds++;
  return kOk;
}

Status evd_set_enabled(Evd* e, bool enabled) {
  Lock lk(e->ia->iface);
  e->enabled = enabled;
  return kOk;
}

Status evd_set_waitable(Evd* e, bool waitable) {
  Lock lk(e->ia->iface);
  e->waitable = waitable;
  if (!waitable) {  // a waiter returns DAT_INVALID_STATE
    std::lock_guard<std::mutex> g(e->wait_mu);
    e->wait_cv.notify_all();
  }
  return kOk;
}

namespace {
// How long a waiter spins, driving the interface, before it sleeps: a
// completion due within a few round trips is taken without a wake-up
// (~30 us here).
constexpr uint64_t kWaitSpinNs = 50'000;
// Longest sleep of a waiter whose interface has a progress thread (which
// wakes it on delivery; this only bounds a missed wake-up).
constexpr uint64_t kThreadedWaitMaxUs = 10'000;

// Waits until the EVD holds `threshold` events, it stops being waitable, or
// `deadline` passes.  No lock: it drives the interface while spinning (and
// on every wake-up when no progress thread will), then sleeps on the EVD's
// own condition variable, which delivery signals.
bool wait_events(Iface* f, Evd* e, uint32_t threshold, uint64_t deadline) {
  const bool threaded = f->cfg.progress != ProgressMode::kInline;
  const uint64_t start = now_ns();
  uint64_t sleep_us = 1;
  auto ready = [e, threshold] { return !e->waitable.load() || e->q.size() >= threshold; };
  for (;;) {
    uint64_t now = now_ns();
    f->drive(now, true);
    if (ready()) return true;
    now = now_ns();
    if (now >= deadline) return false;
    if (now - start < kWaitSpinNs) {
      progress_others(f);
      cpu_relax();
      continue;
    }
    // Sleeping: the progress thread (if any) takes over the interface; an
    // interface of the process without one (inline) is driven here, at every
    // wake-up.
    const bool others = any_inline_iface();
    const uint64_t cap_us = threaded && !others ? kThreadedWaitMaxUs : f->cfg.idle_us;
    const uint64_t left_us = (deadline - now) / 1000 + 1;
    {
      std::unique_lock<std::mutex> lk(e->wait_mu);
      e->wait_cv.wait_for(lk, std::chrono::microseconds(std::min(sleep_us, left_us)), ready);
    }
    sleep_us = std::min<uint64_t>(sleep_us * 2, cap_us);
    if (!threaded || others) progress_others(f);
  }
}
}  // namespace

Status evd_wait(Evd* e, uint64_t timeout_us, int64_t threshold, Event* ev, uint32_t* nmore) {
  Iface* f = e->ia->iface;
  if (threshold <= 0 || static_cast<uint64_t>(threshold) > e->qlen)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (!e->waitable) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_UNWAITABLE);
  if (!e->enabled) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_DISABLED);
  bool expected = false;
  if (!e->waiter.compare_exchange_strong(expected, true))
    return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_WAITER);
  e->threshold = static_cast<uint32_t>(threshold);
  // Pairs with the fence in Iface::deliver (see there).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const uint64_t start = now_ns();
  const uint64_t deadline = timeout_us == kInfinite || timeout_us > UINT64_MAX / 2000
                                ? UINT64_MAX
                                : start + timeout_us * 1000;
  const bool got = wait_events(f, e, static_cast<uint32_t>(threshold), deadline);
  e->waiter = false;
  if (!e->waitable) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_UNWAITABLE);
  if (!got) {
    if (nmore != nullptr) *nmore = e->q.size();
    return fail(Type::TIMEOUT_EXPIRED);
  }
  pop_event(e, ev);
  if (nmore != nullptr) *nmore = e->q.size();
  return kOk;
}

Status evd_dequeue(Evd* e, Event* ev) {
  if (pop_event(e, ev)) return kOk;
  e->ia->iface->drive(now_ns(), true);
  if (!pop_event(e, ev)) return fail(Type::QUEUE_EMPTY);
  return kOk;
}

Status evd_resize(Evd* e, int64_t qlen) {
  Lock lk(e->ia->iface);
  if (qlen <= 0 || static_cast<uint64_t>(qlen) > e->ia->iface->limits.max_evd_qlen)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (!e->q.resize(static_cast<uint32_t>(qlen))) return fail(Type::INVALID_STATE);
  // The RC completion queue only stages completions before they become
  // events (drained while the EVD has room), so the EVD's length changes
  // without it.  Queue pairs point at it: it is re-sized only when no
  // endpoint feeds this EVD.
  bool fed = false;
  for (auto& [qpn, ep] : e->ia->iface->ep_by_qpn) fed |= ep->req_evd == e || ep->recv_evd == e;
  if (e->cq && !fed) {
    rc::Completion c;
    std::vector<rc::Completion> held;
    while (e->cq->pop(&c)) held.push_back(c);
    e->cq = std::make_unique<rc::CompletionQueue>(
        std::max<size_t>(static_cast<size_t>(qlen), held.size()));
    for (const auto& x : held) (void)e->cq->push(x);
  }
  e->qlen = static_cast<uint32_t>(qlen);
  e->overflow_reported = false;
  return kOk;
}

Status evd_post_se(Evd* e, const void* pointer) {
  Lock lk(e->ia->iface);
  if ((e->flags & evd_flag::kSoftware) == 0)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG1);
  if (e->q.size() >= e->qlen) return fail(Type::QUEUE_FULL);
  Event ev;
  ev.num = EventNum::kSoftware;
  ev.evd = e;
  ev.sw_pointer = pointer;
  e->ia->iface->deliver(e, std::move(ev));
  return kOk;
}

Status evd_free(Evd* e) {
  Lock lk(e->ia->iface);
  if (e->refs > 0 || e->waiter) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_IN_USE);
  if (e->ia->async_evd == e) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_IN_USE);
  free_evd(e);
  return kOk;
}

Status cno_create(Ia* ia, void* instance, AgentFn fn, Cno** out) {
  Lock lk(ia->iface);
  auto* c = new Cno(ia);
  c->agent_instance = instance;
  c->agent_fn = fn;
  adopt(ia, c);
  *out = c;
  return kOk;
}

Status cno_modify_agent(Cno* c, void* instance, AgentFn fn) {
  Lock lk(c->ia->iface);
  c->agent_instance = instance;
  c->agent_fn = fn;
  return kOk;
}

Status cno_wait(Cno* c, uint64_t timeout_us, Evd** out) {
  Iface* f = c->ia->iface;
  Lock lk(f);
  if (c->waiter) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_CNO_IN_USE);
  // An EVD of this CNO that already holds events triggers it at once.
  if (c->triggered == nullptr)
    for (Object* o : c->ia->children)
      if (o->type == HandleType::kEvd) {
        auto* e = static_cast<Evd*>(o);
        if (e->cno == c && e->enabled && !e->waiter && !e->q.empty()) {
          c->triggered = e;
          break;
        }
      }
  c->waiter = true;
  const bool got = wait_for(f, lk, c->cv, timeout_us, [c] { return c->triggered != nullptr; });
  c->waiter = false;
  if (!got) return fail(Type::TIMEOUT_EXPIRED);
  *out = c->triggered.exchange(nullptr);
  return kOk;
}

Status cno_free(Cno* c) {
  Lock lk(c->ia->iface);
  if (c->evds > 0 || c->waiter) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_CNO_IN_USE);
  destroy(c);
  return kOk;
}

// ------------------------------------------------------------- EP

Status ep_create(Ia* ia, Pz* pz, Evd* recv, Evd* req, Evd* conn, const EpAttr* attr, Ep** out,
                 Srq* srq) {
  Iface* f = ia->iface;
  Lock lk(f);
  auto ep = std::make_unique<Ep>(ia);
  if (attr != nullptr) {
    Status st = check_ep_attr(f, *attr);
    if (!st.ok()) return st;
    ep->attr = *attr;
  }
  grant_sizes(f, &ep->attr);
  ep->pz = pz;
  ep->recv_evd = recv;
  ep->req_evd = req;
  ep->conn_evd = conn;
  Status st = srq != nullptr ? srq_attach(ep.get(), srq) : kOk;
  if (st.ok()) st = f->make_qp(ep.get());
  if (!st.ok()) {
    srq_detach(ep.get());
    return st;
  }
  pz->refs++;
  for (Evd* e : {recv, req, conn})
    if (e != nullptr) e->refs++;
  Ep* raw = ep.release();
  adopt(ia, raw);
  *out = raw;
  return kOk;
}

Status ep_modify(Ep* ep, const std::function<Status(Ep*, EpSettings*)>& resolve) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  if (ep->state != EpState::kUnconnected && ep->state != EpState::kTentativePending &&
      ep->state != EpState::kReserved)
    return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  EpSettings s{ep->pz, ep->recv_evd, ep->req_evd, ep->conn_evd, ep->attr};
  Status st = resolve(ep, &s);
  if (!st.ok()) return st;
  if (s.pz == nullptr || s.pz->ia->iface != f)
    return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  // An SRQ EP stays in its SRQ's PZ (the receives are checked against it).
  if (ep->srq != nullptr && s.pz != ep->srq->pz)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  st = check_ep_attr(f, s.attr);
  if (!st.ok()) return st;
  grant_sizes(f, &s.attr);
  // Re-create the queue pair with the new settings (nothing is connected
  // yet; receives already posted would be lost, so refuse then).
  if (ep->qp != nullptr && ep->qp->recv_queue_used() > 0)
    return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_NOTREADY);
  f->destroy_qp(ep);
  if (s.pz != ep->pz) {
    if (ep->pz != nullptr) ep->pz->refs--;
    s.pz->refs++;
  }
  for (Evd* e : {ep->recv_evd, ep->req_evd, ep->conn_evd})
    if (e != nullptr) e->refs--;
  for (Evd* e : {s.recv, s.req, s.conn})
    if (e != nullptr) e->refs++;
  ep->pz = s.pz;
  ep->recv_evd = s.recv;
  ep->req_evd = s.req;
  ep->conn_evd = s.conn;
  ep->attr = s.attr;
  return f->make_qp(ep);
}

Status ep_connect(Ep* ep, uint32_t ip, uint64_t conn_qual, uint64_t timeout_us,
                  const uint8_t* pdata, uint32_t pdata_len) {
  if (ip == 0 || ip == 0xFFFFFFFFu)
    return fail(Type::INVALID_ADDRESS, Sub::INVALID_ADDRESS_UNSUPPORTED);
  Iface* f = ep->ia->iface;
  Lock lk(f);
  if (ep->state != EpState::kUnconnected) return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  if (ep->conn_evd == nullptr) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_NOTREADY);
  Status st = f->connect(ep, ip, conn_qual, timeout_us, pdata, pdata_len);
  if (st.ok()) f->progress(now_ns(), true);
  return st;
}

Status ep_peer(Ep* src, uint32_t* ip, uint64_t* conn_qual) {
  Lock lk(src->ia->iface);
  if (src->state != EpState::kConnected) return fail(Type::INVALID_STATE, ep_state_sub(src->state));
  *ip = src->peer_ip;
  *conn_qual = src->conn_qual;
  return kOk;
}

Status ep_disconnect(Ep* ep, bool abrupt) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  Status st = f->disconnect(ep, abrupt);
  if (st.ok()) f->progress(now_ns(), true);
  return st;
}

// Data path: no interface lock (see submit()).
Status ep_post(Ep* ep, const PostArgs& a) {
  Iface* f = ep->ia->iface;
  const EpState state = ep->state.load(std::memory_order_acquire);
  if (state != EpState::kConnected || ep->qp == nullptr)
    return fail(Type::INVALID_STATE, ep_state_sub(state));
  rc::SendWr wr;
  wr.cookie = a.cookie;
  wr.op = a.op;
  uint64_t total = 0;
  const bool read = a.op == rc::WrOp::kRead;
  const bool write = a.op == rc::WrOp::kWrite || a.op == rc::WrOp::kWriteImm;
  const bool atomic = a.op == rc::WrOp::kCompareSwap || a.op == rc::WrOp::kFetchAdd;
  const uint32_t max_iov = read    ? ep->attr.max_rdma_read_iov
                           : write ? ep->attr.max_rdma_write_iov
                                   : ep->attr.max_request_iov;
  Status st = fill_sges(ep, a.sge, a.nsge, max_iov, wr.sge, &wr.num_sge, &total);
  if (st.ok()) st = request_flags(ep, a.cflags, &wr.flags);
  if (st.ok() && atomic && (wr.num_sge != 1 || total != 8))
    st = fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (st.ok() && a.remote != nullptr) {
    if (total > a.remote->length) st = fail(Type::LENGTH_ERROR);
    if (total > ep->attr.max_rdma_size) st = fail(Type::LENGTH_ERROR);
    wr.rkey = a.remote->rkey;
    wr.remote_va = a.remote->va;
  } else if (st.ok() && a.op != rc::WrOp::kSend && a.op != rc::WrOp::kSendImm) {
    st = fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  }
  if (!st.ok()) return st;
  wr.imm = a.imm;
  wr.compare = a.compare;
  wr.swap_add = a.swap_add;
  return submit(f, ep, true, &wr, nullptr);
}

Status ep_post_recv(Ep* ep, const rc::Sge* sge, uint32_t nsge, uint64_t cookie, uint32_t cflags) {
  if ((cflags & ~0x1Fu) != 0) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  Iface* f = ep->ia->iface;
  const EpState state = ep->state.load(std::memory_order_acquire);
  if (ep->qp == nullptr || state == EpState::kDisconnected)
    return fail(Type::INVALID_STATE, ep_state_sub(state));
  if (ep->srq != nullptr) return fail(Type::MODEL_NOT_SUPPORTED);  // post to its SRQ instead
  rc::RecvWr wr;
  wr.cookie = cookie;
  uint64_t total = 0;
  Status st = fill_sges(ep, sge, nsge, ep->attr.max_recv_iov, wr.sge, &wr.num_sge, &total);
  if (!st.ok()) return st;
  return submit(f, ep, false, nullptr, &wr);
}

Status ep_get_status(Ep* ep, EpStatus* out) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  f->progress(now_ns(), true);
  out->state = ep->state;
  out->recv_idle = ep->qp == nullptr || ep->qp->recv_queue_used() == 0;
  out->req_idle = ep->qp == nullptr || ep->qp->send_queue_used() == 0;
  return kOk;
}

Status ep_reset(Ep* ep) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  if (ep->state == EpState::kUnconnected) return kOk;
  if (ep->state != EpState::kDisconnected)
    return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  f->drop_ep(ep);
  f->destroy_qp(ep);
  ep->cm = CmState::kIdle;
  ep->local_comm = ep->remote_comm = 0;
  ep->peer_ip = 0;
  ep->state = EpState::kUnconnected;
  return f->make_qp(ep);
}

Status ep_free(Ep* ep) {
  Lock lk(ep->ia->iface);
  if (ep->state == EpState::kReserved)
    return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_RESERVED);
  // dat_ep_free(3DAT): not in Passive Connection Pending (an RSP's EP whose
  // CR is unanswered: the CR still points at it); the CR is rejected first.
  if (ep->state == EpState::kPassivePending && ep->cm != CmState::kRepSent)
    return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_PASSCONNPENDING);
  // Nor a provider-created EP whose CR is unanswered: the CR owns it (and
  // frees it when rejected).
  if (ep->state == EpState::kTentativePending)
    return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_TENTCONNPENDING);
  free_ep(ep);
  return kOk;
}

Status ep_recv_query(Ep* ep, uint32_t* nbufs) {
  Lock lk(ep->ia->iface);
  *nbufs = ep->qp == nullptr ? 0 : static_cast<uint32_t>(ep->qp->recv_queue_used());
  return kOk;
}

Status ep_set_watermark(Ep* ep, int64_t soft_hw, int64_t hard_hw) {
  if (soft_hw < -1 || soft_hw > UINT32_MAX) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (hard_hw < -1 || hard_hw > UINT32_MAX) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  Iface* f = ep->ia->iface;
  Lock lk(f);
  if (ep->srq == nullptr) return fail(Type::MODEL_NOT_SUPPORTED);  // marks count SRQ receives
  ep->soft_hw = static_cast<uint32_t>(soft_hw);                    // -1 -> UINT32_MAX: not set
  ep->hard_hw = static_cast<uint32_t>(hard_hw);
  f->check_srqs();
  return kOk;
}

// ------------------------------------------------------------- PSP / RSP / CR

Status psp_create(Ia* ia, uint64_t qual, const void* evd_h, uint32_t flags, Sp** out) {
  Lock lk(ia->iface);
  return sp_listen(ia, qual, evd_h, HandleType::kPsp, flags, nullptr, out);
}

Status psp_create_any(Ia* ia, uint64_t* qual, const void* evd_h, uint32_t flags, Sp** out) {
  Lock lk(ia->iface);
  uint64_t q = 0x10000;  // above the range consumers usually pick by hand
  while (ia->iface->listeners.count(q) != 0) ++q;
  Status st = sp_listen(ia, q, evd_h, HandleType::kPsp, flags, nullptr, out);
  if (st.ok()) *qual = q;
  return st;
}

Status rsp_create(Ia* ia, uint64_t qual, Ep* ep, const void* evd_h, Sp** out) {
  Lock lk(ia->iface);
  if (ep->state != EpState::kUnconnected) return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  Sp* sp = nullptr;
  Status st = sp_listen(ia, qual, evd_h, HandleType::kRsp, 0, ep, &sp);
  if (!st.ok()) return st;
  ep->state = EpState::kReserved;
  ep->sp = sp;
  *out = sp;
  return kOk;
}

Status sp_free(Sp* sp) {
  Lock lk(sp->ia->iface);
  free_sp(sp);
  return kOk;
}

Status cr_accept(Cr* cr, Ep* ep, const uint8_t* pdata, uint32_t pdata_len) {
  Iface* f = cr->ia->iface;
  Lock lk(f);
  if (ep == nullptr) ep = cr->ep;
  if (ep == nullptr) return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  const bool own = ep == cr->ep;
  if (!own && ep->state != EpState::kUnconnected)
    return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  if (ep->conn_evd == nullptr) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_NOTREADY);
  if (!own && cr->ep != nullptr && cr->ep->state == EpState::kPassivePending && cr->sp != nullptr &&
      cr->sp->type == HandleType::kRsp)
    cr->ep->state = EpState::kReserved;  // RSP's own EP not used: back to reserved
  Status st = f->accept(cr, ep, pdata, pdata_len);
  if (st.ok()) f->progress(now_ns(), true);
  return st;
}

Status cr_reject(Cr* cr, const uint8_t* pdata, uint32_t pdata_len) {
  Iface* f = cr->ia->iface;
  Lock lk(f);
  Status st = f->reject(cr, pdata, pdata_len);
  if (st.ok()) f->progress(now_ns(), true);
  return st;
}

Status cr_handoff(Cr* cr, uint64_t qual) {
  Iface* f = cr->ia->iface;
  Lock lk(f);
  auto it = f->listeners.find(qual);
  if (it == f->listeners.end() || it->second->type != HandleType::kPsp)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Sp* to = it->second;
  if (cr->sp != nullptr && cr->sp->crs > 0) cr->sp->crs--;
  cr->sp = to;
  cr->conn_qual = qual;
  to->crs++;
  Event ev;
  ev.num = EventNum::kConnRequest;
  ev.evd = to->evd;
  ev.sp = to;
  ev.conn_qual = qual;
  ev.cr = cr;
  f->deliver(to->evd, std::move(ev));
  return kOk;
}

// ------------------------------------------------------------- LMR / RMR

Status lmr_create(Ia* ia, Pz* pz, const LmrSpec& spec, uint32_t privileges, Lmr** out) {
  Iface* f = ia->iface;
  Lock lk(f);
  auto l = std::make_unique<Lmr>(ia);
  l->pz = pz;
  l->privileges = privileges;
  l->mem_type = spec.type;
  l->host = spec.host;
  l->va = spec.va;
  l->length = spec.length;
  if (spec.type == MemType::kLmr) {
    l->parent = spec.parent;
    l->host = spec.parent->host;
    l->va = spec.parent->va;
    l->length = spec.parent->length;
  }
  if (spec.type == MemType::kSharedVirtual && spec.cookie != nullptr)
    // The 40-byte cookie is opaque binary: copied and compared byte for byte.
    std::memcpy(l->cookie.data(), spec.cookie, kCookieSize);
  if (l->length > f->limits.max_lmr_size) return fail(Type::LENGTH_ERROR);
  // Local read access is always granted, as InfiniBand verbs do (OFED's
  // dtest sends from an LMR registered with DAT_MEM_PRIV_LOCAL_WRITE_FLAG
  // only); the LMR still reports the privileges the consumer asked for.
  if (!f->mr->lmr_register(pz->id, l->host, l->va, l->length, privileges | rc::priv::kLocalRead,
                           &l->lmr_context))
    return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_MEMORY_REGION);
  if ((privileges & (rc::priv::kRemoteRead | rc::priv::kRemoteWrite | rc::priv::kRemoteAtomic)) !=
      0)
    l->rmr_context = l->lmr_context;  // the LMR's own key doubles as its remote key
  if (l->parent != nullptr) l->parent->children++;
  pz->refs++;
  f->lmr_by_ctx[l->lmr_context] = l.get();
  Lmr* raw = l.release();
  adopt(ia, raw);
  *out = raw;
  return kOk;
}

Status lmr_free(Lmr* l) {
  Lock lk(l->ia->iface);
  return free_lmr(l);
}

Status lmr_sync(Ia* ia, uint64_t n, const std::function<rc::Sge(uint64_t)>& seg) {
  Lock lk(ia->iface);
  for (uint64_t i = 0; i < n; ++i) {
    const rc::Sge g = seg(i);
    rc::LmrInfo l;
    if (!ia->iface->mr->lmr_query(g.lmr_context, &l))
      return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
    const uint64_t va = g.va, len = g.length;
    if (va < l.va || len > l.length || va - l.va > l.length - len)
      return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  }
  // x86 is cache coherent for DMA-less software RDMA: a full fence orders the
  // consumer's stores before the engine's later loads (and vice versa).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return kOk;
}

Status rmr_create(Pz* pz, Rmr** out) {
  Iface* f = pz->ia->iface;
  Lock lk(f);
  auto* r = new Rmr(pz->ia);
  r->pz = pz;
  if (!f->mr->rmr_alloc(pz->id, &r->slot)) {
    delete r;
    return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_MEMORY_REGION);
  }
  pz->refs++;
  adopt(pz->ia, r);
  *out = r;
  return kOk;
}

Status rmr_bind(Rmr* r, Ep* ep, uint32_t lmr_context, uint64_t va, uint64_t length,
                uint32_t privileges, uint64_t cookie, uint32_t cflags, uint32_t* ctx_out) {
  Iface* f = r->ia->iface;
  Lock lk(f);
  if (ep->state != EpState::kConnected || ep->qp == nullptr)
    return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  if (ep->pz != r->pz) return fail(Type::PROTECTION_VIOLATION);
  Lmr* lmr = nullptr;
  if (length > 0) {
    auto it = f->lmr_by_ctx.find(lmr_context);
    if (it == f->lmr_by_ctx.end()) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
    lmr = it->second;
    const auto be =
        f->mr->check_bind(r->slot, lmr_context, va, length, privileges, ep->pz->id, ep->qp->qpn());
    switch (be) {
      case rc::BindError::kOk:
        break;
      case rc::BindError::kPzMismatch:
        return fail(Type::PROTECTION_VIOLATION);
      case rc::BindError::kPrivilegeNotCovered:
        return fail(Type::PRIVILEGES_VIOLATION);
      case rc::BindError::kOutOfBounds:
        return fail(Type::LENGTH_ERROR);
      case rc::BindError::kRmrBusy:
        return fail(Type::INVALID_STATE);
      default:
        return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
    }
  }
  if (!r->binds.empty() && r->bind_qpn != ep->qp->qpn()) return fail(Type::INVALID_STATE);
  uint32_t wr_flags = 0;
  Status st = request_flags(ep, cflags, &wr_flags);
  if (!st.ok()) return st;
  rc::SendWr wr;
  wr.cookie = reinterpret_cast<uintptr_t>(r);
  wr.op = rc::WrOp::kBind;
  wr.flags = wr_flags & ~rc::wr_flag::kSolicited;
  wr.rmr_handle = r->slot;
  wr.bind_lmr = lmr_context;
  wr.bind_va = va;
  wr.bind_len = length;
  wr.bind_privileges = privileges;
  const uint32_t ctx = f->mr->rmr_predict_context(r->slot, static_cast<uint32_t>(r->binds.size()));
  const auto pr = f->post_send_now(ep, wr);
  if (pr != rc::Qp::PostResult::kOk) return post_result(pr, ep);
  r->binds.push_back(Rmr::PendingBind{cookie, lmr, va, length, privileges});
  r->bind_qpn = ep->qp->qpn();
  r->context = ctx;
  *ctx_out = ctx;
  f->progress(now_ns(), true);
  return kOk;
}

Status rmr_free(Rmr* r) {
  Lock lk(r->ia->iface);
  if (!r->binds.empty()) return fail(Type::INVALID_STATE);
  free_rmr(r);
  return kOk;
}

}  // namespace dpdat::dat
