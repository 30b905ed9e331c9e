// Posting work requests: the data path (ep_post, ep_post_recv).  No interface
// lock: see submit().

#include "ops.hpp"

#include <atomic>
#include <thread>

namespace dpdat::dat {

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

Status post_result(rc::PostResult r, const Ep* ep) {
  switch (r) {
    case rc::PostResult::kOk:
      return kOk;
    case rc::PostResult::kQueueFull:
      return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
    case rc::PostResult::kInvalidState:
      return fail(Type::INVALID_STATE, ep != nullptr ? ep_state_sub(ep->state) : Sub::NO_SUBTYPE);
    case rc::PostResult::kInvalidWr:
      return fail(Type::INVALID_PARAMETER);
  }
  return fail(Type::INTERNAL_ERROR);
}

namespace {

// Longest a post waits for room in a full hand-off ring.
constexpr uint64_t kHandoffWaitNs = 1'000'000'000;
// Longest a post its EP's counts call full waits for the queue pair's own
// answer.
constexpr uint64_t kFullRecheckNs = 1'000'000;

// The data path of a post: straight into the queue pair when this thread
// can take the engine token (then it progresses the engine itself, see
// below), else handed to the token's holder.  A hand-off is refused for a
// full queue on the EP's own counts of what it posted and what its queue
// pair retired (as of the completions delivered), and for a full hand-off
// ring (back-pressure).
// Posts straight into the queue pair if this thread can take the engine
// token now and nothing handed off is left (a request claimed from then on
// is not older than this one); false when it cannot (*out untouched).  Then
// a send's frames are built, and sent at once or (inline progress, a
// completion pending) with the consumer's next poll.  Not while a busy
// progress thread runs the engine (Shard::served), unless `force`d: the
// queue pair's own answer to a post its EP's counts refuse.
bool try_direct(Iface* f, Ep* ep, const rc::SendWr* swr, const rc::RecvWr* rwr, uint64_t now,
                Status* out, bool force = false) {
  Shard& s = *ep->shard;
  if (!force && s.served(now)) return false;
  if (!s.token.try_lock()) return false;
  f->drain_handoff(s);
  if (s.handoff.pending()) {  // older requests cannot all go yet: hand over behind them
    s.token.unlock();
    return false;
  }
  const rc::PostResult r = f->post_into_qp(ep, swr, rwr);
  s.last_consumer_progress.store(now, std::memory_order_relaxed);
  // A send leaves at once; a receive only waits for what comes, so its post
  // does not poll the link (a consumer reposting a buffer before it answers
  // a message would otherwise pay for a poll before its answer goes out).
  // Without a progress thread (progress=inline), while an earlier signalled
  // send of this EP has not completed, the consumer has to poll its request
  // EVD for it, and that poll steps this engine (an empty EVD is progressed
  // before it answers; the completion cannot come without a step): the
  // send's frames are built now and leave with the ones built meanwhile, a
  // burst at a time, at the latest with that poll.  Otherwise (the first
  // signalled send, an EP whose completions nobody waits for, a progress
  // thread) they leave now, as a consumer that injects a message and then
  // waits outside the API counts on.
  if (r == rc::PostResult::kOk && swr != nullptr) {
    const uint64_t earlier =
        ep->signaled_into_qp - ((swr->flags & rc::wr_flag::kSignaled) != 0 ? 1 : 0);
    if (f->cfg.progress == ProgressMode::kInline && ep->req_evd != nullptr &&
        earlier > ep->send_completions) {
      s.engine->emit(now);
    } else {
      s.engine->counters().consumer_steps++;
      f->step(s, now, false);
    }
  }
  s.token.unlock();
  // A request handed over while this thread held the token: its poster's
  // try failed, so it is taken here.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (s.handoff.pending()) f->drive_shard(s, now, true);
  run_upcalls();
  *out = post_result(r, ep);
  return true;
}

Status submit(Iface* f, Ep* ep, bool is_send, const rc::SendWr* swr, const rc::RecvWr* rwr) {
  const uint64_t now = now_ns();
  Status st;
  if (try_direct(f, ep, swr, rwr, now, &st)) return st;
  rc::Qp* qp = ep->qp;
  Shard& s = *ep->shard;
  const uint64_t cap = is_send ? rc::qp::config(*qp).sq_depth : rc::qp::config(*qp).rq_depth;
  std::atomic<uint64_t>& posted = is_send ? ep->sends_posted : ep->recvs_posted;
  const std::atomic<uint64_t>& retired = is_send ? ep->sends_retired : ep->recvs_retired;
  // Counted before it can be taken, so `retired` never passes `posted`.
  if (posted.fetch_add(1, std::memory_order_relaxed) - retired.load(std::memory_order_acquire) >=
      cap) {
    posted.fetch_sub(1, std::memory_order_relaxed);
    // Full on these counts, which lag the queue pair (requests retired
    // without a completion yet, e.g. unsignalled ones): the queue pair's own
    // answer, once the holder lets go of the token (a millisecond at most).
    for (const uint64_t end = now + kFullRecheckNs; now_ns() < end;) {
      if (try_direct(f, ep, swr, rwr, now_ns(), &st, true)) return st;
      std::this_thread::yield();
    }
    return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
  }
  auto fill = [&](Handoff& h) { h.fill(ep, qp, swr, rwr); };
  // A full hand-off ring means the holder is behind (preempted, say): the
  // request waits for room (driving the engine if the holder lets go), a
  // second at most, rather than failing a post its EP has room for.
  const uint64_t give_up = now + kHandoffWaitNs;
  for (uint32_t tries = 0; !s.handoff.push_with(fill); ++tries) {
    f->drive_shard(s, now_ns(), true);
    if (now_ns() >= give_up) {
      posted.fetch_sub(1, std::memory_order_relaxed);
      return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
    }
    if (tries >= 64) std::this_thread::yield();
  }
  // A busy progress thread takes it on its next turn: nothing to drive,
  // no one to wake.
  if (s.served(now)) return kOk;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  f->drive_shard(s, now, true);  // the holder may have let go meanwhile
  s.wake();                      // or it sleeps
  run_upcalls();
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

}  // namespace

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

Status ep_post_flushed(Ep* ep, rc::WcOp op, uint64_t cookie) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  if (ep->qp == nullptr || ep->shard == nullptr || rc::qp::state(*ep->qp) != rc::QpState::kError)
    return fail(Type::INVALID_STATE);
  Shard& s = *ep->shard;
  // Behind the requests handed over before it: they complete flushed too.
  f->drain_handoff(s);
  if (s.handoff.pending()) return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
  const bool recv = op == rc::WcOp::kRecv;
  Evd* evd = recv ? ep->recv_evd : ep->req_evd;
  rc::CompletionQueue* cq = evd != nullptr ? evd->cqs[s.index].get() : &s.sink_cq;
  rc::Completion c;
  c.cookie = cookie;
  c.qpn = rc::qp::number(*ep->qp);
  c.op = op;
  c.status = rc::WcStatus::kFlushed;
  if (cq == nullptr || !cq->push(c)) return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
  // Into the EVD, waking its waiters and channel, as the engine's do.
  f->progress(now_ns(), false);
  return kOk;
}

Status ep_post_recv(Ep* ep, const rc::Sge* sge, uint32_t nsge, uint64_t cookie, uint32_t cflags,
                    uint64_t multi_min) {
  if ((cflags & ~0x1Fu) != 0) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  Iface* f = ep->ia->iface;
  const EpState state = ep->state.load(std::memory_order_acquire);
  if (ep->qp == nullptr || state == EpState::kDisconnected)
    return fail(Type::INVALID_STATE, ep_state_sub(state));
  if (ep->srq != nullptr) return fail(Type::MODEL_NOT_SUPPORTED);  // post to its SRQ instead
  rc::RecvWr wr;
  wr.cookie = cookie;
  wr.multi_min = multi_min;
  uint64_t total = 0;
  Status st = fill_sges(ep, sge, nsge, ep->attr.max_recv_iov, wr.sge, &wr.num_sge, &total);
  if (!st.ok()) return st;
  if (multi_min != 0 && total > UINT32_MAX) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  return submit(f, ep, false, nullptr, &wr);
}

}  // namespace dpdat::dat
