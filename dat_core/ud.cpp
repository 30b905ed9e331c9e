// UD queue pairs on an interface (ops_ud.hpp).

#include "ops_ud.hpp"

#include "core.hpp"

namespace dpdat::dat {

Status ud_create(Ia* ia, Pz* pz, Evd* recv_evd, Evd* req_evd, uint32_t max_recv, uint32_t max_send,
                 UdEp** out) {
  if (ia == nullptr || pz == nullptr || recv_evd == nullptr || req_evd == nullptr || out == nullptr)
    return fail(Type::INVALID_PARAMETER);
  Iface* f = ia->iface;
  Lock lk(f);
  Shard& s = *f->shards[0];
  rc::UdConfig cfg;
  cfg.rq_depth = std::max(max_recv, 1u);
  cfg.sq_depth = std::max(max_send, 1u);
  cfg.pmtu = f->pmtu;
  rc::UdQp* q = s.engine->create_ud_qp(pz->id, cfg, f->cq_for(req_evd, s), f->cq_for(recv_evd, s));
  if (q == nullptr) return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
  auto* u = new UdEp;
  u->ia = ia;
  u->pz = pz;
  u->recv_evd = recv_evd;
  u->req_evd = req_evd;
  u->shard = &s;
  u->qp = q;
  u->qpn = q->qpn();
  pz->refs++;
  *out = u;
  return kOk;
}

Status ud_free(UdEp* u) {
  if (u == nullptr) return fail(Type::INVALID_PARAMETER);
  {
    Lock lk(u->ia->iface);
    u->shard->engine->destroy_ud_qp(u->qp);
    u->pz->refs--;
  }
  delete u;
  return kOk;
}

Status ud_to_init(UdEp* u, uint32_t qkey) {
  Lock lk(u->ia->iface);
  return u->qp->to_init(qkey) ? kOk : fail(Type::INVALID_STATE);
}

Status ud_to_rtr(UdEp* u) {
  Lock lk(u->ia->iface);
  return u->qp->to_rtr() ? kOk : fail(Type::INVALID_STATE);
}

Status ud_to_rts(UdEp* u, uint32_t sq_psn) {
  Iface* f = u->ia->iface;
  Lock lk(f);
  rc::UdLocal local;
  local.mac = f->link->mac();
  local.ip = f->cfg.ip;
  local.udp_src_port = wire::roce_src_port(u->qpn);
  return u->qp->to_rts(local, wire::Psn(sq_psn & 0xFFFFFFu)) ? kOk : fail(Type::INVALID_STATE);
}

Status ud_set_qkey(UdEp* u, uint32_t qkey) {
  Lock lk(u->ia->iface);
  if (u->qp->state() == rc::UdState::kReset || u->qp->state() == rc::UdState::kError)
    return fail(Type::INVALID_STATE);
  u->qp->set_qkey(qkey);
  return kOk;
}

Status ud_to_error(UdEp* u) {
  Iface* f = u->ia->iface;
  Lock lk(f);
  u->qp->set_error();
  f->progress(now_ns(), false);  // the flushed receives reach the EVD
  return kOk;
}

Status ud_to_reset(UdEp* u) {
  Lock lk(u->ia->iface);
  u->qp->reset();
  return kOk;
}

rc::UdState ud_state(const UdEp* u) {
  Lock lk(u->ia->iface);
  return u->qp->state();
}

Status ud_post_send(UdEp* u, const rc::SendWr& wr, const UdAddr& to) {
  Iface* f = u->ia->iface;
  Lock lk(f);
  const rc::PostResult r = u->qp->post_send(wr, rc::UdDest{to.mac, to.ip, to.qpn, to.qkey});
  if (r == rc::PostResult::kOk) {
    u->shard->engine->flush();  // the datagram leaves now
    f->progress(now_ns(), false);
  }
  return post_result(r, nullptr);
}

Status ud_post_recv(UdEp* u, const rc::RecvWr& wr) {
  Lock lk(u->ia->iface);
  return post_result(u->qp->post_recv(wr), nullptr);
}

rc::UdCounters ud_counters(const UdEp* u) {
  Lock lk(u->ia->iface);
  return u->qp->counters();
}

}  // namespace dpdat::dat
