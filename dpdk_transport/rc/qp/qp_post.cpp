// Posting of work requests onto the send and receive queues (and taking
// receives from a shared receive queue), on the engine's thread.

#include <algorithm>

#include "rc/engine/engine.hpp"
#include "rc/qp/qp.hpp"
#include "rc/qp/qp_util.hpp"

namespace dpdat::rc {

using wire::Opcode;
using wire::Psn;
namespace aeth = wire::aeth;
using namespace detail;

Qp::PostResult Qp::post_send(const SendWr& wr) {
  if (state_ != QpState::kRts) return PostResult::kInvalidState;
  if (sq_tail_ - sq_head_ >= sq_cap_) return PostResult::kQueueFull;
  // (An unused ring goes back to the pool at the next progress().)
  if (!sq_.reserve_one(engine_.pool(), sq_head_, sq_tail_, sq_cap_))
    return PostResult::kQueueFull;  // no memory for the ring now
  if (wr.num_sge > kMaxSge) return PostResult::kInvalidWr;
  uint64_t total = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) {
    if (wr.sge[i].length > (uint64_t{1} << 31) || total + wr.sge[i].length > (uint64_t{1} << 31))
      return PostResult::kInvalidWr;  // messages are limited to 2 GiB
    total += wr.sge[i].length;
  }
  uint32_t npkts = 0;
  switch (wr.op) {
    case WrOp::kSend:
    case WrOp::kSendImm:
    case WrOp::kWrite:
    case WrOp::kWriteImm:
    case WrOp::kRead:
      npkts = pkts_for(total, cfg_.pmtu);
      break;
    case WrOp::kCompareSwap:
    case WrOp::kFetchAdd:
      if (total != 8) return PostResult::kInvalidWr;  // the original value lands here
      npkts = 1;
      break;
    case WrOp::kBind:
      // The MW is ours until the bind executes (do_bind clears the mark).
      if (!mr_.mark_bind_pending(wr.mw_handle, qpn_)) return PostResult::kInvalidState;
      npkts = 0;
      break;
    default:
      return PostResult::kInvalidWr;
  }
  SendWqe& w = sq(sq_tail_);
  // Field by field: 'w = SendWqe{}; w.wr = wr' zeroed and then copied ~400
  // bytes per work request (a 'rep stos' and a 'rep movsq').
  copy_wr(w.wr, wr);
  w.total_len = total;
  w.first_psn = Psn{};
  w.npkts = npkts;
  w.sent = 0;
  w.resp_pkts = 0;
  w.resp_seen = 0;
  w.started = false;
  w.rd_seq = 0;
  w.done = false;
  w.status = WcStatus::kSuccess;
  w.result_rkey = 0;
  w.host.fill(nullptr);
  ++sq_tail_;
  engine_.activate(this);
  return PostResult::kOk;
}

Qp::PostResult Qp::post_recv(const RecvWr& wr) {
  if (state_ == QpState::kError || srq_ != nullptr) return PostResult::kInvalidState;
  if (rq_tail_ - rq_head_ >= rq_cap_) return PostResult::kQueueFull;
  if (wr.num_sge > kMaxSge) return PostResult::kInvalidWr;
  uint64_t capacity = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) {
    if (wr.sge[i].length > (uint64_t{1} << 31)) return PostResult::kInvalidWr;
    capacity += wr.sge[i].length;
  }
  if (wr.multi_min != 0 && capacity > UINT32_MAX) return PostResult::kInvalidWr;
  if (!rq_.reserve_one(engine_.pool(), rq_head_, rq_tail_, rq_cap_))
    return PostResult::kQueueFull;  // no memory for the ring now
  RecvWqe& r = rq(rq_tail_);
  copy_wr(r.wr, wr);
  r.capacity = capacity;
  r.used = 0;
  r.host.fill(nullptr);
  ++rq_tail_;
  return PostResult::kOk;
}

bool Qp::attach_srq(Srq* srq) {
  if (state_ != QpState::kReset || rq_head_ != rq_tail_) return false;
  srq_ = srq;
  return true;
}

bool Qp::have_recv() {
  if (rq_head_ != rq_tail_) return true;
  if (srq_ == nullptr) return false;
  if (!rq_.reserve_one(engine_.pool(), rq_head_, rq_tail_, rq_cap_)) return false;  // RNR
  RecvWr wr;
  if (!srq_->take(&wr)) return false;
  RecvWqe& r = rq(rq_tail_);
  copy_wr(r.wr, wr);
  r.capacity = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) r.capacity += wr.sge[i].length;
  r.used = 0;
  r.host.fill(nullptr);
  ++rq_tail_;
  srq_peak_ = std::max(srq_peak_, static_cast<uint32_t>(rq_tail_ - rq_head_));
  return true;
}

bool Qp::complete_rejected(bool is_send, uint64_t cookie) {
  Completion c;
  c.cookie = cookie;
  c.qpn = qpn_;
  c.op = is_send ? WcOp::kSend : WcOp::kRecv;
  c.status = WcStatus::kLocalQpOperationError;
  CompletionQueue* cq = is_send ? send_cq_ : recv_cq_;
  if (cq == nullptr) return true;  // nobody to tell
  if (cq->push(c)) return true;
  ctr_.cq_stalls++;
  return false;
}

}  // namespace dpdat::rc
