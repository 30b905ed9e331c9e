// Shared receive queues (DAT SRQ) over rc::Srq, and their watermark
// notifications.  Locking as in ops.hpp.
//
// Readings of the specification chosen here (see README):
// - An EP and its SRQ must be in the same PZ (the receive buffers are checked
//   against the EP's PZ when a message arrives).
// - The SRQ low watermark (dat_srq_set_lw) and an EP's soft high watermark
//   (dat_ep_set_watermark, ep_attr.srq_soft_hw) are one-shot notifications,
//   re-armed by setting them again.  DAT has no event number of their own:
//   they arrive on the IA's async EVD as DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR
//   with dat_handle = the SRQ (reason DAT_SRQ_LOW_WATERMARK_EVENT) or the EP
//   (reason DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT).
// - Reaching an EP's hard high watermark breaks its connection
//   (DAT_CONNECTION_EVENT_BROKEN; outstanding DTOs are flushed).
// - Receives in progress on an EP count as that EP's outstanding receives;
//   this engine works on one incoming message per connection at a time, so
//   an EP never holds more than one.

#include <algorithm>

#include "ops.hpp"

namespace dpdat::dat {

namespace {

constexpr bool watermark_set(uint32_t hw) { return hw != 0 && hw != UINT32_MAX; }

}  // namespace

Status srq_create(Ia* ia, Pz* pz, uint32_t max_recv_dtos, uint32_t max_recv_iov,
                  uint32_t low_watermark, Srq** out) {
  Iface* f = ia->iface;
  if (max_recv_dtos == 0 || max_recv_dtos > f->limits.max_recv_per_srq)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (max_recv_iov == 0 || max_recv_iov > rc::kMaxSge)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (low_watermark > max_recv_dtos) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  Lock lk(f);
  if (f->srqs.size() >= f->limits.max_srqs)
    return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_SRQ);
  auto* s = new Srq(ia);
  s->pz = pz;
  s->rq = std::make_unique<rc::Srq>(max_recv_dtos);
  s->max_recv_iov = max_recv_iov;
  s->rq->set_low_watermark(low_watermark);
  pz->refs++;
  f->srqs.push_back(s);
  adopt(ia, s);
  *out = s;
  return kOk;
}

void free_srq(Srq* s) {
  std::erase(s->ia->iface->srqs, s);
  s->pz->refs--;
  // Receives never taken are discarded: no EP, hence no EVD, owns them.
  (void)s->rq->drain();
  destroy(s);
}

Status srq_free(Srq* s) {
  Lock lk(s->ia->iface);
  if (!s->eps.empty()) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_SRQ_IN_USE);
  free_srq(s);
  return kOk;
}

Status srq_post_recv(Srq* s, const rc::Sge* sge, uint32_t nsge, uint64_t cookie) {
  if (nsge > s->max_recv_iov) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  rc::RecvWr wr;
  wr.cookie = cookie;
  wr.num_sge = nsge;
  std::copy(sge, sge + nsge, wr.sge);
  Iface* f = s->ia->iface;
  Lock lk(f);
  switch (s->rq->post(wr)) {
    case rc::Srq::PostResult::kOk:
      f->progress(now_ns(), true);  // a sender waiting out an RNR may go on now
      return kOk;
    case rc::Srq::PostResult::kQueueFull:
      return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_SRQ);
    case rc::Srq::PostResult::kInvalidWr:
      return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  }
  return fail(Type::INTERNAL_ERROR);
}

Status srq_post_recv_many(Srq* s, const rc::Sge* sge, const uint64_t* cookies, uint32_t n,
                          uint32_t* posted) {
  *posted = 0;
  if (n > 0 && s->max_recv_iov < 1) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Iface* f = s->ia->iface;
  Lock lk(f);
  Status st = kOk;
  for (uint32_t i = 0; i < n; ++i) {
    rc::RecvWr wr;
    wr.cookie = cookies[i];
    wr.num_sge = 1;
    wr.sge[0] = sge[i];
    const rc::Srq::PostResult r = s->rq->post(wr);
    if (r == rc::Srq::PostResult::kQueueFull) {
      st = fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_SRQ);
      break;
    }
    if (r != rc::Srq::PostResult::kOk) {
      st = fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
      break;
    }
    ++*posted;
  }
  if (*posted > 0) f->progress(now_ns(), true);  // a sender waiting out an RNR may go on now
  return st;
}

Status srq_query(Srq* s, SrqInfo* out) {
  Iface* f = s->ia->iface;
  Lock lk(f);
  f->progress(now_ns(), true);
  out->max_recv_dtos = static_cast<uint32_t>(s->rq->capacity());
  out->max_recv_iov = s->max_recv_iov;
  out->low_watermark = s->rq->low_watermark();
  out->available = s->rq->available();
  out->outstanding = s->rq->outstanding();
  return kOk;
}

Status srq_resize(Srq* s, uint32_t max_recv_dtos) {
  if (max_recv_dtos == 0 || max_recv_dtos > s->ia->iface->limits.max_recv_per_srq)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Lock lk(s->ia->iface);
  // Smaller than what is posted (or below the low watermark): refused.
  if (max_recv_dtos < s->rq->low_watermark() || !s->rq->resize(max_recv_dtos))
    return fail(Type::INVALID_STATE);
  return kOk;
}

Status srq_set_lw(Srq* s, uint32_t low_watermark) {
  Iface* f = s->ia->iface;
  Lock lk(f);
  if (low_watermark > s->rq->capacity()) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  s->rq->set_low_watermark(low_watermark);
  f->check_srqs();  // already below: reported at once
  return kOk;
}

Status srq_attach(Ep* ep, Srq* s) {
  if (s->pz != ep->pz) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  if (s->eps.size() >= s->ia->iface->limits.max_ep_per_srq)
    return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_SRQ);
  ep->srq = s;
  s->eps.push_back(ep);
  if (watermark_set(ep->attr.srq_soft_hw)) ep->soft_hw = ep->attr.srq_soft_hw;
  return kOk;
}

void srq_detach(Ep* ep) {
  if (ep->srq == nullptr) return;
  std::erase(ep->srq->eps, ep);
  ep->srq = nullptr;
}

void Iface::async_event(Ia* ia, EventNum n, Object* handle, uint32_t reason) {
  Evd* async = ia->async_evd;
  if (async == nullptr) return;
  Event ev;
  ev.num = n;
  ev.ia = ia;
  ev.handle = handle;
  ev.reason = reason;
  ev.evd = async;
  deliver(async, std::move(ev));
}

void Iface::check_srqs(const Shard* only) {
  for (Srq* s : srqs) {
    if (only != nullptr && s->shard != only) continue;
    if (s->rq->limit_reached())
      async_event(s->ia, EventNum::kProviderInternal, s, kSrqLowWatermarkReason);
    for (size_t i = 0; i < s->eps.size(); ++i) {
      Ep* ep = s->eps[i];
      if (ep->qp == nullptr) continue;
      const uint32_t peak = rc::qp::take_srq_peak(*ep->qp);
      if (watermark_set(ep->soft_hw) && peak >= ep->soft_hw) {
        ep->soft_hw = 0;  // once per setting
        async_event(ep->ia, EventNum::kProviderInternal, ep, kEpSoftHighWatermarkReason);
      }
      if (watermark_set(ep->hard_hw) && peak >= ep->hard_hw && ep->state == EpState::kConnected) {
        ep->hard_hw = 0;
        rc::qp::set_error(*ep->qp, rc::QpError::kLocalLength, now_ns());  // seen as BROKEN
      }
    }
  }
}

}  // namespace dpdat::dat
