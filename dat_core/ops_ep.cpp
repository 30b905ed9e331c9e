// EP operations on the control path (create, modify, connect, status, reset,
// free); posting is in ops_post.cpp.

#include "ops.hpp"

namespace dpdat::dat {

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
void grant_sizes(const Iface* f, EpAttr* a) {
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
  if (ep->qp != nullptr && rc::qp::recv_queue_used(*ep->qp) > 0)
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

Status ep_get_status(Ep* ep, EpStatus* out) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  f->progress(now_ns(), true);
  out->state = ep->state;
  out->recv_idle = ep->qp == nullptr || rc::qp::recv_queue_used(*ep->qp) == 0;
  out->req_idle = ep->qp == nullptr || rc::qp::send_queue_used(*ep->qp) == 0;
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

Status ep_settle(Ep* ep) {
  Lock lk(ep->ia->iface);
  if (ep->qp != nullptr) ep->ia->iface->settle_completions(ep);
  return kOk;
}

Status ep_recv_query(Ep* ep, uint32_t* nbufs) {
  Lock lk(ep->ia->iface);
  *nbufs = ep->qp == nullptr ? 0 : static_cast<uint32_t>(rc::qp::recv_queue_used(*ep->qp));
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

Status ep_set_rma_counters(Ep* ep, std::atomic<uint64_t>* writes, std::atomic<uint64_t>* reads) {
  Lock lk(ep->ia->iface);  // every token: the responder counts
  ep->rma_writes = writes;
  ep->rma_reads = reads;
  if (ep->qp != nullptr) rc::qp::set_rma_counters(*ep->qp, writes, reads);
  return kOk;
}

}  // namespace dpdat::dat
