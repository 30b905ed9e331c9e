// Completion delivery: RC completions of a shard's queue pairs become events
// on their EVDs (drain_cq), connection and async events are queued
// (deliver), and an EP's completions are settled before its queue pair goes.

#include <mutex>
#include <vector>

#include "core.hpp"

namespace dpdat::dat {

// Moves completions from the EVD's RC completion queue of shard s into its
// event queue while there is room; a full EVD leaves them in the RC queue,
// where the queue pairs stall (nothing is dropped) and an overflow is
// reported.
bool Iface::drain_cq(Shard& s, Evd* evd) {
  bool moved = false;
  rc::CompletionQueue* cq = evd->cqs[s.index].get();
  rc::Completion c;
  while (evd->q.size() < evd->qlen) {
    if (!cq->pop(&c)) return moved;
    moved = true;
    auto it = ep_by_qpn.find(c.qpn);
    Ep* ep = it == ep_by_qpn.end() ? nullptr : it->second;
    if (ep != nullptr && ep->qp != nullptr) {
      // What the queue pair retired, for posters that hand off (ep_post):
      // published before the completion can be seen.
      if (c.op == rc::WcOp::kRecv || c.op == rc::WcOp::kRecvWriteImm) {
        ep->recvs_retired.store(ep->recvs_into_qp - rc::qp::recv_queue_used(*ep->qp),
                                std::memory_order_release);
      } else {
        ep->sends_retired.store(ep->sends_into_qp - rc::qp::send_queue_used(*ep->qp),
                                std::memory_order_release);
        ++ep->send_completions;
      }
    }
    deliver(evd, cq_event(evd, c, ep));
    // A failed DTO may mean the connection broke: the housekeeping pass
    // turns a queue pair in error into BROKEN.
    if (c.status != rc::WcStatus::kSuccess && ep != nullptr)
      next_housekeeping.store(0, std::memory_order_relaxed);
  }
  if (!cq->empty()) report_overflow(evd);
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
  ev.rc_status = c.status;
  ev.solicited = c.solicited;
  ev.multi = c.multi;
  ev.released = c.released;
  ev.offset = c.multi ? c.offset : 0;
  ev.qpn = c.qpn;
  if (c.grh) {
    ev.grh = true;
    ev.src_qp = c.src_qp;
  }
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
// here, which is safe because every token is held (no engine runs).
void Iface::settle_completions(Ep* ep) {
  const uint32_t qpn = rc::qp::number(*ep->qp);
  Evd* const evds[2] = {ep->recv_evd, ep->req_evd != ep->recv_evd ? ep->req_evd : nullptr};
  for (Evd* evd : evds) {
    if (evd == nullptr || !evd->dto || ep->shard == nullptr) continue;
    rc::CompletionQueue* cq = evd->cqs[ep->shard->index].get();
    if (cq == nullptr) continue;
    std::vector<rc::Completion> others;
    std::vector<rc::Completion> mine;
    rc::Completion c;
    while (cq->pop(&c)) (c.qpn == qpn ? mine : others).push_back(c);
    for (const rc::Completion& x : others) (void)cq->push(x);  // same room as before
    for (const rc::Completion& x : mine) {
      if (x.op != rc::WcOp::kRecv && x.op != rc::WcOp::kRecvWriteImm) ++ep->send_completions;
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

}  // namespace dpdat::dat
