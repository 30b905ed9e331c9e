// EVD and CNO operations.  Dequeuing and waiting are data path: no interface
// lock (the EVD's queue has its own, see event_queue.hpp).

#include "ops.hpp"

#include <algorithm>
#include <memory>
#include <vector>

namespace dpdat::dat {

bool pop_event(Evd* evd, Event* out) {
  if (!evd->q.pop(out)) return false;
  // Connection events' private data stays valid until the next dequeue of
  // such an event here (DTO events carry none and leave it alone).
  if (out->pdata_buf) {
    std::lock_guard<std::mutex> g(evd->wait_mu);
    evd->dequeued_pdata = std::move(out->pdata_buf);  // out->pdata still points into it
  }
  return true;
}

Status make_evd(Ia* ia, int64_t qlen, Cno* cno, uint32_t flags, Evd** out) {
  Iface* f = ia->iface;
  if (qlen <= 0 || static_cast<uint64_t>(qlen) > f->limits.max_evd_qlen)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (flags == 0 || (flags & ~0x1F1u) != 0) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  if (f->evd_count >= f->limits.max_evds)
    return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEVD);
  f->evd_count++;
  auto* e = new Evd(ia);
  e->qlen = static_cast<uint32_t>(qlen);
  (void)e->q.resize(e->qlen);  // empty: always fits
  e->flags = flags;
  e->cno = cno;
  if (cno != nullptr) cno->evds++;
  if ((flags & (evd_flag::kDto | evd_flag::kRmrBind)) != 0) {
    // Its RC completion queues come with the first EP of each shard that
    // feeds it (Iface::cq_for).
    e->dto = true;
    f->cq_evds.push_back(e);
  }
  adopt(ia, e);
  *out = e;
  return kOk;
}

void free_evd(Evd* e) {
  Iface* f = e->ia->iface;
  if (e->dto) {
    f->cq_evds.erase(std::find(f->cq_evds.begin(), f->cq_evds.end(), e));
    for (size_t i = 0; i < e->cqs.size(); ++i)
      if (e->cqs[i]) f->shards[i]->unwatch_cq(e->cqs[i].get());
  }
  if (e->cno != nullptr) e->cno->evds--;
  f->evd_count--;
  // Its own IA is closing abruptly: IAs that borrowed it lose their async EVD.
  for (Ia* u : e->async_users) u->async_evd = nullptr;
  destroy(e);
}

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
// How long a waiter spins, driving the interface, before it sleeps once
// traffic has stopped: a completion due within a few round trips is taken
// without a wake-up (~30 us here).
constexpr uint64_t kWaitSpinNs = 50'000;
// Longest sleep of a waiter whose interface has a progress thread (which
// wakes it on delivery; this only bounds a missed wake-up).
constexpr uint64_t kThreadedWaitMaxUs = 10'000;

// Waits until the EVD holds `threshold` events, it stops being waitable, or
// `deadline` passes.  No lock: it drives the interface while spinning (and
// on every wake-up when no progress thread will), then sleeps on the EVD's
// own condition variable, which delivery signals.
// The shards a consumer of EVD e drives: those whose queue pairs feed it (a
// connection or async EVD: all of them, the CM runs on shard 0).
uint64_t shards_of(const Iface* f, const Evd* e) {
  const uint64_t m = e->shard_mask.load(std::memory_order_relaxed);
  return m != 0 ? m : f->all_shards();
}

bool wait_events(Iface* f, Evd* e, uint32_t threshold, uint64_t deadline) {
  const bool threaded = f->cfg.progress != ProgressMode::kInline;
  const uint64_t start = now_ns();
  auto ready = [e, threshold] { return !e->waitable.load() || e->q.size() >= threshold; };
  // Spinning: this thread drives the engines feeding the EVD (and the
  // process's other interfaces).
  for (;;) {
    const uint64_t mask = shards_of(f, e);
    uint64_t now = now_ns();
    f->drive(now, true, mask);
    if (ready()) return true;
    now = now_ns();
    if (now >= deadline) return false;
    // Spin while traffic moves (a transfer in flight is driven here, not
    // handed to a thread and woken from), and kWaitSpinNs at least.
    if (now - start >= kWaitSpinNs && now - f->last_traffic(mask) >= kWaitSpinNs) break;
    progress_others(f);
    cpu_relax();
  }
  // Sleeping: the interface's progress thread, if it has one, takes over at
  // once (this thread no longer counts as driving it) and wakes this one on
  // delivery; without one, this thread drives it at every wake-up.  The
  // process's interfaces without a thread are driven here too.
  if (threaded) f->consumer_stopped(shards_of(f, e));
  uint64_t sleep_us = 1;
  for (;;) {
    const bool others = any_inline_iface();
    const uint64_t cap_us = threaded && !others ? kThreadedWaitMaxUs : f->cfg.idle_us;
    const uint64_t now = now_ns();
    if (now >= deadline) return ready();
    const uint64_t left_us = (deadline - now) / 1000 + 1;
    {
      std::unique_lock<std::mutex> lk(e->wait_mu);
      if (e->wait_cv.wait_for(lk, std::chrono::microseconds(std::min(sleep_us, left_us)), ready))
        return true;
    }
    sleep_us = std::min<uint64_t>(sleep_us * 2, cap_us);
    if (!threaded) f->drive(now_ns(), true, shards_of(f, e));
    if (!threaded || others) progress_others(f);
    if (ready()) return true;
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
  const uint64_t deadline = deadline_after(start, timeout_us);
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
  Iface* f = e->ia->iface;
  f->drive(now_ns(), true, shards_of(f, e));
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
  Iface* f = e->ia->iface;
  bool fed = false;
  for (auto& [qpn, ep] : f->ep_by_qpn) fed |= ep->req_evd == e || ep->recv_evd == e;
  if (e->dto && !fed) {
    for (size_t i = 0; i < e->cqs.size(); ++i) {
      auto& cq = e->cqs[i];
      if (!cq) continue;
      rc::Completion c;
      std::vector<rc::Completion> held;
      while (cq->pop(&c)) held.push_back(c);
      f->shards[i]->unwatch_cq(cq.get());
      cq = std::make_unique<rc::CompletionQueue>(
          std::max<size_t>(static_cast<size_t>(qlen), held.size()));
      cq->watch(&f->shards[i]->ready_cqs, e);
      for (const auto& x : held) (void)cq->push(x);
    }
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
  Iface* f = c->ia->iface;
  destroy(c);
  lk.unlock();
  f->wait_upcalls();  // an upcall that began before: its agent is done with its instance
  return kOk;
}

}  // namespace dpdat::dat
