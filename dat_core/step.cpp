// Driving an interface: one step of a shard (hand-offs, engine poll,
// completions to EVDs), the control step (CM messages and timers, shard 0),
// and the data path's entry into a shard's queue pairs.

#include <atomic>
#include <thread>

#include "core.hpp"

namespace dpdat::dat {

void Iface::consumer_stopped(uint64_t mask) {
  for (auto& s : shards) {
    if ((mask >> s->index & 1u) == 0) continue;
    s->last_consumer_progress.store(0, std::memory_order_relaxed);
    s->notify();
  }
}

Iface::Frames Iface::frames() const {
  Frames f;
  for (const auto& s : shards) {
    f.tx += s->engine->counters().tx_frames;
    f.rx += s->engine->counters().rx_frames;
  }
  return f;
}

uint64_t Iface::last_traffic(uint64_t mask) const {
  uint64_t t = 0;
  for (const auto& s : shards)
    if ((mask >> s->index & 1u) != 0)
      t = std::max(t, s->last_traffic.load(std::memory_order_relaxed));
  return t;
}

bool Iface::drive_shard(Shard& s, uint64_t now, bool consumer) {
  if (consumer) {
    if (s.served(now)) return false;  // its busy progress thread runs it
    s.last_consumer_progress.store(now, std::memory_order_relaxed);
    // A consumer thread that drives an engine allocates and frees its
    // frames: registered with the link once (DPDK gives it an lcore id, and
    // with it the mempool's per-lcore cache instead of the shared ring).
    thread_local const Link* registered = nullptr;
    if (registered != link.get()) {
      link->register_thread();
      registered = link.get();
    }
  }
  bool moved = false;
  // A work request handed off while the holder was finishing its step is
  // taken by the next try (the holder checks after releasing, as the poster
  // tries after publishing: one of the two sees the other).
  for (int round = 0; round < 2; ++round) {
    if (!s.token.try_lock()) break;
    if (consumer) s.engine->counters().consumer_steps++;
    moved |= step(s, now, false);
    s.token.unlock();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!s.handoff.pending()) break;
  }
  return moved;
}

bool Iface::drive(uint64_t now, bool consumer, uint64_t mask) {
  // Shard 0 runs the CM: it is driven too while control work is wanted (due,
  // and no try for every token failed within kControlRetryNs), so an
  // interface without a progress thread connects whatever its consumers
  // wait on.
  if ((mask & 1u) == 0 && control_wanted(now)) mask |= 1u;
  bool moved = false;
  for (auto& s : shards)
    if ((mask >> s->index & 1u) != 0) moved |= drive_shard(*s, now, consumer);
  run_upcalls();
  return moved;
}

bool Iface::progress(uint64_t now, bool consumer) {
  bool moved = false;
  for (auto& s : shards) {
    if (consumer) s->last_consumer_progress.store(now, std::memory_order_relaxed);
    moved |= step(*s, now, true);
  }
  return moved;
}

bool Iface::control_step(uint64_t now) {
  bool moved = false, cm_ran = false;
  if (!cm_in.empty()) {
    process_cm_in(now);
    cm_pending.store(0, std::memory_order_relaxed);
    moved = cm_ran = true;
  }
  // Timers are not traffic: a pass that found nothing due must not keep an
  // idle progress thread in its spin window.
  if (now >= next_housekeeping.load(std::memory_order_relaxed)) {
    cm_timers(now);
    cm_ran = true;
  }
  // CM replies (an RTU, a DREP) and timer resends leave now: with inline
  // progress the consumer may not drive the interface again for a long time
  // (it returned from dat_evd_wait with its CONNECTED event), and the peer
  // waits for them.
  if (cm_ran) engine->flush();
  return moved;
}

bool Iface::step(Shard& s, uint64_t now, bool ctl) {
  bool moved = drain_handoff(s);
  moved |= s.engine->poll(now) != 0;
  if (group != nullptr) {
    // Frames handed to other engines: their threads may sleep.
    const uint64_t handed = s.engine->counters().handed_off;
    if (handed != s.handed_off_seen) {
      s.handed_off_seen = handed;
      s.last_handoff.store(now, std::memory_order_relaxed);
      for (auto& o : shards)
        if (o.get() != &s) o->wake();
    }
  }
  // The CM runs on shard 0 under mu and every token, which the data path
  // only tries (the control path takes mu before the tokens, in order).
  bool locked_here = false;
  size_t tokens_here = 0;
  if (s.index == 0 && !ctl && control_wanted(now)) {
    locked_here = mu.try_lock();
    if (locked_here) {
      // Late (CM messages waiting, or housekeeping kControlJoinNs behind):
      // it waits for the tokens, each held for a step at most (their
      // holders only try for this one), so that drivers busy on every
      // engine cannot put it off for ever.
      const bool late = control_late(now);
      const uint64_t wait_from = late ? now_ns() : 0;
      for (tokens_here = 1; tokens_here < shards.size(); ++tokens_here) {
        if (late) {
          shards[tokens_here]->token.lock();
        } else if (!shards[tokens_here]->token.try_lock()) {
          break;
        }
      }
      if (late) s.engine->counters().control_wait_ns += now_ns() - wait_from;
      if (tokens_here < shards.size()) {  // another shard is busy: next time
        while (--tokens_here > 0) shards[tokens_here]->token.unlock();
        mu.unlock();
        locked_here = false;
      } else {
        note_iface_locked();
      }
    }
    if (!locked_here) {
      // Not at every step: each try takes the other engines' tokens from
      // their drivers for a moment.
      s.control_retry_ns.store(now + kControlRetryNs, std::memory_order_relaxed);
      s.engine->counters().control_deferred++;
    }
  }
  const bool have_ctl = ctl || locked_here;
  if (s.index == 0 && have_ctl) moved |= control_step(now);
  // Completions wait while CM messages do, so that a connection's events
  // come before the completions that follow them.
  if (have_ctl || cm_pending.load(std::memory_order_relaxed) == 0) {
    if (!srqs.empty()) check_srqs(have_ctl ? nullptr : &s);
    s.ready_pass.swap(s.ready_cqs);
    for (rc::CompletionQueue* cq : s.ready_pass) {
      cq->unlisted();
      moved |= drain_cq(s, static_cast<Evd*>(cq->owner()));
      if (!cq->empty()) cq->relist();  // its EVD is full: again next step
    }
    s.ready_pass.clear();
    rc::Completion c;
    while (s.sink_cq.pop(&c)) moved = true;  // EPs without an EVD for this stream
  }
  if (locked_here) {
    for (size_t i = shards.size(); i-- > 1;) shards[i]->token.unlock();
    mu.unlock();
    note_iface_unlocked();
  }
  if (moved) s.last_traffic.store(now, std::memory_order_relaxed);
  return moved;
}

// A handed-off request the queue pair refused after ep_post accepted it
// (the connection broke meanwhile): it completes as flushed (QP in error) or
// as a local EP error, in order; false while the completion queue is full.
bool Iface::drain_handoff(Shard& s) {
  bool did = false;
  while (Handoff* h = s.handoff.front()) {
    Ep* ep = h->ep;
    if (h->qp == nullptr) {  // its queue pair was destroyed meanwhile
      s.handoff.pop_front();
      continue;
    }
    const rc::PostResult r =
        h->is_send ? rc::qp::post_send(*h->qp, h->send) : rc::qp::post_recv(*h->qp, h->recv);
    if (r == rc::PostResult::kQueueFull) break;  // after progress, in order
    if (r != rc::PostResult::kOk) {
      rc::Completion c;
      c.cookie = h->is_send ? h->send.cookie : h->recv.cookie;
      c.qpn = rc::qp::number(*h->qp);
      c.op = h->is_send ? rc::wc_op_of(h->send.op) : rc::WcOp::kRecv;
      c.multi = c.released = !h->is_send && h->recv.multi_min != 0;
      c.status = rc::qp::state(*h->qp) == rc::QpState::kError
                     ? rc::WcStatus::kFlushed
                     : rc::WcStatus::kLocalQpOperationError;
      Evd* evd = h->is_send ? ep->req_evd : ep->recv_evd;
      rc::CompletionQueue* cq = evd != nullptr ? evd->cqs[s.index].get() : &s.sink_cq;
      if (!cq->push(c)) break;  // full: the consumer makes room first
    }
    (h->is_send ? ep->sends_into_qp : ep->recvs_into_qp)++;
    s.handoff.pop_front();
    did = true;
  }
  return did;
}

// Gives the handed-off requests to their queue pairs; false when some are
// left: one stalls on a full queue, or its poster has claimed its slot and
// not yet written it (that takes nanoseconds unless the poster is
// preempted: waited for, 10 ms at most).
bool Iface::drain_handoff_all(Shard& s) {
  const uint64_t give_up = now_ns() + 10'000'000;
  for (uint32_t spins = 0;; ++spins) {
    drain_handoff(s);
    if (!s.handoff.pending()) return true;
    if (s.handoff.front() != nullptr || now_ns() >= give_up) return false;  // stalled
    if (spins < 64) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

rc::PostResult Iface::post_send_now(Ep* ep, const rc::SendWr& wr) {
  // Never past older requests: with some left, report a full queue.
  if (!drain_handoff_all(*ep->shard)) return rc::PostResult::kQueueFull;
  return post_into_qp(ep, &wr, nullptr);
}

rc::PostResult Iface::post_into_qp(Ep* ep, const rc::SendWr* swr, const rc::RecvWr* rwr) {
  const rc::PostResult r =
      swr != nullptr ? rc::qp::post_send(*ep->qp, *swr) : rc::qp::post_recv(*ep->qp, *rwr);
  if (r == rc::PostResult::kOk) {
    (swr != nullptr ? ep->sends_into_qp : ep->recvs_into_qp)++;
    if (swr != nullptr && (swr->flags & rc::wr_flag::kSignaled) != 0) ++ep->signaled_into_qp;
    (swr != nullptr ? ep->sends_posted : ep->recvs_posted).fetch_add(1, std::memory_order_relaxed);
  }
  return r;
}

}  // namespace dpdat::dat
