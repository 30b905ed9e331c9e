// rdma_cm connections over dat_core's CM: listening (a PSP per device),
// requests, connecting, accepting, rejecting, disconnecting.

#include <cerrno>

#include "state.hpp"

using namespace dpdat::rdmacm;  // NOLINT(google-build-using-namespace): the C entry points
namespace verbs = dpdat::verbs;

namespace {

// Whether a QP of context c has this number.
bool names_qp(ibv_context* c, uint32_t qpn) {
  verbs::Context* ctx = verbs::ctx_of(c);
  std::lock_guard<std::mutex> lk(ctx->async_mu);
  for (const auto& [o, q] : ctx->qps)
    if (q->qp.qp_num == qpn) return true;
  for (const verbs::Qp* q : ctx->ud_qps)
    if (q->qp.qp_num == qpn) return true;
  return false;
}

// conn_param's responder resources / initiator depth: RDMA_MAX_RESP_RES and
// RDMA_MAX_INIT_DEPTH (0xFF) ask for the device's most; more than that is
// EINVAL (-1).
int rd_value(uint8_t v) {
  if (v == 0xFF) return static_cast<int>(verbs::kMaxRdAtomic);
  return v <= verbs::kMaxRdAtomic ? v : -1;
}

// An id without a QP connects the application's own, conn_param->qp_num: a
// CM-only EP names it in the REQ or REP.  0, or an errno.
int make_cm_ep(Id* id, const rdma_conn_param* p) {
  if (p == nullptr) return EINVAL;
  const int rd_in = rd_value(p->responder_resources);
  const int rd_out = rd_value(p->initiator_depth);
  if (rd_in < 0 || rd_out < 0) return EINVAL;
  if (p->qp_num == 0 || !names_qp(id->id.verbs, p->qp_num)) return EINVAL;
  dat::Ep* ep = nullptr;
  const dat::Status st =
      dat::cm_ep_create(id->dev->ia, id->dev->evd, p->qp_num, static_cast<uint32_t>(rd_in),
                        static_cast<uint32_t>(rd_out), id->src_port, &ep);
  if (!st.ok()) return verbs::to_errno(st);
  std::lock_guard<std::mutex> lk(g().mu);
  g().by_ep[ep] = id;
  id->cm_ep = ep;
  return 0;
}

// A connection attempt of a CM-only EP failed at once: the id may try again.
void drop_cm_ep(Id* id) {
  dat::Ep* ep = nullptr;
  {
    std::unique_lock<std::mutex> lk(g().mu);
    ep = id->cm_ep;
    if (ep == nullptr) return;
    g().by_ep.erase(ep);
    g().acked.wait(lk, [ep] { return g().agent_eps.count(ep) == 0; });
    id->cm_ep = nullptr;
  }
  (void)dat::qp_free(ep);
}

}  // namespace

extern "C" int dpdat_rdma_listen(rdma_cm_id* cid, int /*backlog*/) {
  if (cid == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  std::vector<Dev*> devs;
  {
    std::lock_guard<std::mutex> lk(g().mu);
    if (id->st != St::kBound) return fail(EINVAL);
    if (id->dev != nullptr) devs.push_back(id->dev);
  }
  if (devs.empty()) {  // bound to the wildcard address: every device
    for (size_t i = 0; i < verbs::devices().size(); ++i)
      if (Dev* d = open_dev(i); d != nullptr) devs.push_back(d);
    if (devs.empty()) return fail(ENODEV);
  }
  std::vector<std::pair<Dev*, dat::Sp*>> sps;
  for (Dev* d : devs) {
    dat::Sp* sp = nullptr;
    const dat::Status st = dat::psp_create(d->ia, id->src_port, d->evd, 0, &sp);
    if (!st.ok()) {
      for (auto& [dd, s] : sps) (void)dat::sp_free(s);
      return fail(st.type == dat::Type::CONN_QUAL_IN_USE ? EADDRINUSE : verbs::to_errno(st));
    }
    sps.emplace_back(d, sp);
  }
  std::lock_guard<std::mutex> lk(g().mu);
  id->sps = sps;
  for (auto& [d, sp] : sps) g().by_sp[sp] = id;
  id->st = St::kListen;
  return 0;
}

extern "C" int dpdat_rdma_get_request(rdma_cm_id* listen, rdma_cm_id** out) {
  if (listen == nullptr || out == nullptr) return fail(EINVAL);
  Id* l = id_of(listen);
  if (!l->sync || l->st != St::kListen) return fail(EINVAL);
  for (;;) {
    if (l->id.event != nullptr) {
      (void)dpdat_rdma_ack_cm_event(l->id.event);
      l->id.event = nullptr;
    }
    rdma_cm_event* ev = nullptr;
    if (dpdat_rdma_get_cm_event(&l->chan->ch, &ev) != 0) return -1;
    if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
      l->id.event = ev;
      continue;
    }
    Id* c = id_of(ev->id);
    c->id.event = ev;  // acked by the new id's next call or its destruction
    if (l->child_qp) {
      ibv_qp_init_attr a = l->child_attr;
      if (dpdat_rdma_create_qp(&c->id, l->child_pd, &a) != 0) {
        const int e = errno;
        (void)dpdat_rdma_reject(&c->id, nullptr, 0);
        (void)dpdat_rdma_destroy_id(&c->id);
        return fail(e);
      }
    }
    *out = &c->id;
    return 0;
  }
}

extern "C" int dpdat_rdma_connect(rdma_cm_id* cid, rdma_conn_param* p) {
  if (cid == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  {
    std::lock_guard<std::mutex> lk(g().mu);
    if (id->st != St::kRoute) return fail(EINVAL);
  }
  // No QP on the id: the application's own (conn_param->qp_num), which it
  // moves itself; CONNECT_RESPONSE, then rdma_establish.
  const bool own_qp = id->id.qp == nullptr;
  if (own_qp) {
    if (const int e = make_cm_ep(id, p); e != 0) return fail(e);
  }
  dat::Ep* ep = ep_of(id);
  uint32_t ip = 0;
  uint16_t port = 0;
  uint64_t timeout_us = UINT64_MAX;
  {
    std::lock_guard<std::mutex> lk(g().mu);
    id->st = St::kConnecting;
    ip = id->dst_ip;
    port = id->dst_port;
    if (const uint32_t ms = id->dev->device->cfg.rdmacm_timeout_ms; ms != 0)
      timeout_us = uint64_t{ms} * 1000;
  }
  const auto* pd = p != nullptr ? static_cast<const uint8_t*>(p->private_data) : nullptr;
  const uint32_t len = p != nullptr && pd != nullptr ? p->private_data_len : 0;
  // The interface's rdmacm_timeout_ms, else the CM's own: ARP gives up after
  // 1 s (UNREACHABLE, EHOSTUNREACH), the REQ after its retries (UNREACHABLE,
  // ETIMEDOUT).
  const dat::Status st = dat::ep_connect(ep, ip, port, timeout_us, pd, len);
  if (!st.ok()) {
    {
      std::lock_guard<std::mutex> lk(g().mu);
      id->st = St::kRoute;
    }
    if (own_qp) drop_cm_ep(id);
    return fail(verbs::to_errno(st));
  }
  if (!id->sync) return 0;
  return wait_sync(id, own_qp ? RDMA_CM_EVENT_CONNECT_RESPONSE : RDMA_CM_EVENT_ESTABLISHED);
}

extern "C" int dpdat_rdma_establish(rdma_cm_id* cid) {
  if (cid == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  // Only for an id without a QP, after CONNECT_RESPONSE (rdma_establish(3)).
  if (cid->qp != nullptr) return fail(EINVAL);
  dat::Ep* ep = nullptr;
  {
    std::lock_guard<std::mutex> lk(g().mu);
    if (id->cm_ep == nullptr || id->st != St::kConnecting) return fail(EINVAL);
    ep = id->cm_ep;
  }
  // The RTU: the peer's ESTABLISHED.  No event on this side.
  const dat::Status st = dat::ep_establish(ep);
  if (!st.ok()) return fail(verbs::to_errno(st));
  if (id->sync && id->id.event != nullptr) {  // the CONNECT_RESPONSE, kept since rdma_connect
    (void)dpdat_rdma_ack_cm_event(id->id.event);
    id->id.event = nullptr;
  }
  std::lock_guard<std::mutex> lk(g().mu);
  if (id->st == St::kConnecting) id->st = St::kConnected;
  return 0;
}

extern "C" int dpdat_rdma_accept(rdma_cm_id* cid, rdma_conn_param* p) {
  if (cid == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  {
    std::lock_guard<std::mutex> lk(g().mu);
    if (id->st != St::kRequest || id->cr == nullptr) return fail(EINVAL);
  }
  // No QP on the id: the application's own (see rdma_connect).
  const bool own_qp = id->id.qp == nullptr;
  if (own_qp) {
    if (const int e = make_cm_ep(id, p); e != 0) return fail(e);
  }
  dat::Ep* ep = ep_of(id);
  dat::Cr* cr = nullptr;
  {
    std::lock_guard<std::mutex> lk(g().mu);
    cr = id->cr;
    id->cr = nullptr;
    id->st = St::kAccepting;
  }
  const auto* pd = p != nullptr ? static_cast<const uint8_t*>(p->private_data) : nullptr;
  const uint32_t len = p != nullptr && pd != nullptr ? p->private_data_len : 0;
  const dat::Status st = dat::cr_accept(cr, ep, pd, len);
  if (!st.ok()) {
    {
      std::lock_guard<std::mutex> lk(g().mu);
      id->cr = cr;
      id->st = St::kRequest;
    }
    if (own_qp) drop_cm_ep(id);
    return fail(verbs::to_errno(st));
  }
  if (id->sync) {
    if (id->id.event != nullptr) {  // the request, kept since rdma_get_request
      (void)dpdat_rdma_ack_cm_event(id->id.event);
      id->id.event = nullptr;
    }
    return wait_sync(id, RDMA_CM_EVENT_ESTABLISHED);
  }
  return 0;
}

extern "C" int dpdat_rdma_reject(rdma_cm_id* cid, const void* pdata, uint8_t len) {
  if (cid == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  dat::Cr* cr = nullptr;
  {
    std::lock_guard<std::mutex> lk(g().mu);
    if (id->st != St::kRequest || id->cr == nullptr) return fail(EINVAL);
    cr = id->cr;
    id->cr = nullptr;
    id->st = St::kDisconnected;
  }
  const dat::Status st =
      dat::cr_reject(cr, static_cast<const uint8_t*>(pdata), pdata != nullptr ? len : 0);
  if (!st.ok()) {
    std::lock_guard<std::mutex> lk(g().mu);
    id->cr = cr;
    id->st = St::kRequest;
    return fail(verbs::to_errno(st));
  }
  return 0;
}

extern "C" int dpdat_rdma_reject_ece(rdma_cm_id* cid, const void* pdata, uint8_t len) {
  return dpdat_rdma_reject(cid, pdata, len);
}

extern "C" int dpdat_rdma_disconnect(rdma_cm_id* cid) {
  if (cid == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  dat::Ep* ep = ep_of(id);
  {
    std::lock_guard<std::mutex> lk(g().mu);
    if (id->st == St::kDisconnected) return 0;  // the peer went first
    if (ep == nullptr ||
        (id->st != St::kConnected && id->st != St::kConnecting && id->st != St::kAccepting))
      return fail(EINVAL);
  }
  // DREQ; DISCONNECTED comes with the DREP (or the CM's timeout).
  const dat::Status st = dat::ep_disconnect(ep, false);
  if (!st.ok()) return fail(verbs::to_errno(st));
  return 0;
}

extern "C" int dpdat_rdma_notify(rdma_cm_id* cid, ibv_event_type /*ev*/) {
  // The CM establishes connections on its own (RTU): nothing to force.
  return cid == nullptr ? fail(EINVAL) : 0;
}
