// rdma_cm queue pairs and SRQs: dpdat verbs objects on the id's device,
// handed to dat_core's CM (qp_cm_attach); rdma_create_ep / rdma_destroy_ep;
// rdma_init_qp_attr.

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "state.hpp"

using namespace dpdat::rdmacm;  // NOLINT(google-build-using-namespace): the C entry points
namespace verbs = dpdat::verbs;
namespace wire = dpdat::wire;

namespace {

ibv_pd* default_pd(Dev* d) { return d->pd; }

// A CQ with a completion channel of its own (what librdmacm gives an id
// whose QP attributes name no CQ; rdma_verbs.h's rdma_get_*_comp use both).
bool make_cq(Id* id, uint32_t n, ibv_comp_channel** ch, ibv_cq** cq) {
  *ch = ibv_create_comp_channel(id->id.verbs);
  if (*ch == nullptr) return false;
  *cq = ibv_create_cq(id->id.verbs, static_cast<int>(std::max(n, 1u)), id, *ch, 0);
  if (*cq == nullptr) {
    (void)ibv_destroy_comp_channel(*ch);
    *ch = nullptr;
    return false;
  }
  return true;
}

// ibv_destroy_qp of an id's QP (directly or through rdma_destroy_qp): the id
// forgets it, and its EP's connection events find no id from now on.
void qp_gone(verbs::Qp* q) {
  std::unique_lock<std::mutex> lk(g().mu);
  g().by_ep.erase(q->ep);
  g().acked.wait(lk, [q] { return g().agent_eps.count(q->ep) == 0; });
  auto* id = static_cast<Id*>(q->cm_id);
  if (id != nullptr && id->id.qp == &q->qp) id->id.qp = nullptr;
  q->cm_gone = nullptr;
  q->cm_id = nullptr;
}

}  // namespace

namespace dpdat::rdmacm {

void free_cqs(Id* id) {
  if (id->own_send_cq && id->id.send_cq != nullptr) {
    (void)ibv_destroy_cq(id->id.send_cq);
    (void)ibv_destroy_comp_channel(id->id.send_cq_channel);
  }
  if (id->own_recv_cq && id->id.recv_cq != nullptr && id->id.recv_cq != id->id.send_cq) {
    (void)ibv_destroy_cq(id->id.recv_cq);
    (void)ibv_destroy_comp_channel(id->id.recv_cq_channel);
  }
  if (id->own_send_cq) {
    id->id.send_cq = nullptr;
    id->id.send_cq_channel = nullptr;
  }
  if (id->own_recv_cq) {
    id->id.recv_cq = nullptr;
    id->id.recv_cq_channel = nullptr;
  }
  id->own_send_cq = id->own_recv_cq = false;
}

}  // namespace dpdat::rdmacm

extern "C" int dpdat_rdma_create_qp(rdma_cm_id* cid, ibv_pd* pd, ibv_qp_init_attr* qia) {
  if (cid == nullptr || qia == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  if (id->dev == nullptr || id->id.qp != nullptr) return fail(EINVAL);
  if (qia->qp_type != IBV_QPT_RC) return fail(EOPNOTSUPP);  // no UD / UC queue pairs
  if (pd == nullptr) pd = default_pd(id->dev);
  if (pd == nullptr || pd->context != id->id.verbs) return fail(EINVAL);
  ibv_qp_init_attr a = *qia;
  if (a.srq == nullptr) a.srq = id->id.srq;
  if (a.send_cq == nullptr) {
    if (!make_cq(id, a.cap.max_send_wr, &id->id.send_cq_channel, &id->id.send_cq)) return -1;
    id->own_send_cq = true;
    a.send_cq = id->id.send_cq;
  }
  if (a.recv_cq == nullptr) {
    if (!make_cq(id, a.cap.max_recv_wr, &id->id.recv_cq_channel, &id->id.recv_cq)) {
      free_cqs(id);
      return -1;
    }
    id->own_recv_cq = true;
    a.recv_cq = id->id.recv_cq;
  }
  ibv_qp* qp = ibv_create_qp(pd, &a);
  if (qp == nullptr) {
    const int e = errno;
    free_cqs(id);
    return fail(e);
  }
  auto* q = reinterpret_cast<verbs::Qp*>(qp);
  // Connected by dat_core's CM from now on; INIT at once, so that receives
  // may be posted before the connection (rdma_create_qp(3)).
  dat::Status st = dat::qp_cm_attach(q->ep, id->dev->evd, id->src_port);
  if (st.ok()) st = dat::qp_to_init(q->ep);
  if (!st.ok()) {
    (void)ibv_destroy_qp(qp);
    free_cqs(id);
    return fail(verbs::to_errno(st));
  }
  q->attr.qp_state = IBV_QPS_INIT;
  q->attr.port_num = 1;
  q->attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  qp->state = IBV_QPS_INIT;
  *qia = a;
  qia->cap = a.cap;
  {
    std::lock_guard<std::mutex> lk(g().mu);
    g().by_ep[q->ep] = id;
    id->id.qp = qp;
    id->id.pd = pd;
    q->cm_id = id;
    q->cm_gone = qp_gone;
  }
  return 0;
}

extern "C" int dpdat_rdma_create_qp_ex(rdma_cm_id* cid, ibv_qp_init_attr_ex* x) {
  if (cid == nullptr || x == nullptr) return fail(EINVAL);
  // What ibv_qp_init_attr carries, and the PD; nothing else of the extended
  // attributes (no ibv_wr_* interface, no create flags).
  if ((x->comp_mask & ~static_cast<uint32_t>(IBV_QP_INIT_ATTR_PD)) != 0 || x->create_flags != 0)
    return fail(EOPNOTSUPP);
  ibv_qp_init_attr a{};
  a.qp_context = x->qp_context;
  a.send_cq = x->send_cq;
  a.recv_cq = x->recv_cq;
  a.srq = x->srq;
  a.cap = x->cap;
  a.qp_type = x->qp_type;
  a.sq_sig_all = x->sq_sig_all;
  const int r =
      dpdat_rdma_create_qp(cid, (x->comp_mask & IBV_QP_INIT_ATTR_PD) != 0 ? x->pd : nullptr, &a);
  if (r == 0) x->cap = a.cap;
  return r;
}

extern "C" void dpdat_rdma_destroy_qp(rdma_cm_id* cid) {
  if (cid == nullptr || cid->qp == nullptr) return;
  Id* id = id_of(cid);
  // Freeing a connected EP sends its DREQ (qp_free); qp_gone unlinks it.
  (void)ibv_destroy_qp(cid->qp);
  free_cqs(id);
}

extern "C" int dpdat_rdma_create_srq(rdma_cm_id* cid, ibv_pd* pd, ibv_srq_init_attr* a) {
  if (cid == nullptr || a == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  if (id->dev == nullptr || id->id.srq != nullptr) return fail(EINVAL);
  if (pd == nullptr) pd = default_pd(id->dev);
  if (pd == nullptr) return -1;
  ibv_srq* s = ibv_create_srq(pd, a);
  if (s == nullptr) return -1;
  id->id.srq = s;
  id->id.pd = pd;
  id->own_srq = true;
  return 0;
}

extern "C" int dpdat_rdma_create_srq_ex(rdma_cm_id* cid, ibv_srq_init_attr_ex* x) {
  if (cid == nullptr || x == nullptr) return fail(EINVAL);
  if ((x->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) != 0 && x->srq_type != IBV_SRQT_BASIC)
    return fail(EOPNOTSUPP);
  if ((x->comp_mask & ~static_cast<uint32_t>(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD)) != 0)
    return fail(EOPNOTSUPP);
  ibv_srq_init_attr a{};
  a.srq_context = x->srq_context;
  a.attr = x->attr;
  return dpdat_rdma_create_srq(cid, (x->comp_mask & IBV_SRQ_INIT_ATTR_PD) != 0 ? x->pd : nullptr,
                               &a);
}

extern "C" void dpdat_rdma_destroy_srq(rdma_cm_id* cid) {
  if (cid == nullptr || cid->srq == nullptr) return;
  Id* id = id_of(cid);
  (void)ibv_destroy_srq(cid->srq);
  cid->srq = nullptr;
  id->own_srq = false;
}

extern "C" int dpdat_rdma_create_ep(rdma_cm_id** out, rdma_addrinfo* res, ibv_pd* pd,
                                    ibv_qp_init_attr* qia) {
  if (out == nullptr || res == nullptr) return fail(EINVAL);
  rdma_cm_id* cid = nullptr;
  if (dpdat_rdma_create_id(nullptr, &cid, nullptr,
                           static_cast<rdma_port_space>(res->ai_port_space)) != 0)
    return -1;
  Id* id = id_of(cid);
  // The QP's type is the address's (rdma_create_ep(3)).
  if (qia != nullptr && res->ai_qp_type != 0)
    qia->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
  int r = 0;
  if ((res->ai_flags & RAI_PASSIVE) != 0) {
    r = dpdat_rdma_bind_addr(cid, res->ai_src_addr);
    if (r == 0 && qia != nullptr) {
      // Each request's id gets its QP from rdma_get_request.
      id->child_qp = true;
      id->child_attr = *qia;
      id->child_pd = pd;
    }
  } else {
    r = dpdat_rdma_resolve_addr(cid, res->ai_src_len > 0 ? res->ai_src_addr : nullptr,
                                res->ai_dst_addr, 2000);
    if (r == 0) r = dpdat_rdma_resolve_route(cid, 2000);
    if (r == 0 && qia != nullptr) r = dpdat_rdma_create_qp(cid, pd, qia);
  }
  if (r != 0) {
    const int e = errno;
    (void)dpdat_rdma_destroy_id(cid);
    return fail(e);
  }
  *out = cid;
  return 0;
}

extern "C" void dpdat_rdma_destroy_ep(rdma_cm_id* cid) {
  if (cid == nullptr) return;
  dpdat_rdma_destroy_qp(cid);
  if (id_of(cid)->own_srq) dpdat_rdma_destroy_srq(cid);
  (void)dpdat_rdma_destroy_id(cid);
}

// rdma_init_qp_attr for a connection this CM made or is making: the
// attributes (and mask) a caller passes to ibv_modify_qp for the state it
// asks for.  RTR and RTS come from the connection's REQ / REP: a request's
// id has both from the REQ before it is accepted (the first PSN this side
// sends is chosen with the request, and the REP names it).
extern "C" int dpdat_rdma_init_qp_attr(rdma_cm_id* cid, ibv_qp_attr* attr, int* mask) {
  if (cid == nullptr || attr == nullptr || mask == nullptr) return fail(EINVAL);
  Id* id = id_of(cid);
  if (id->dev == nullptr) return fail(EINVAL);
  const ibv_qp_state want = attr->qp_state;
  if (want != IBV_QPS_INIT && want != IBV_QPS_RTR && want != IBV_QPS_RTS) return fail(EINVAL);
  ibv_qp_attr a{};
  a.qp_state = want;
  if (want == IBV_QPS_INIT) {
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
                        IBV_ACCESS_REMOTE_ATOMIC;
    *attr = a;
    *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    return 0;
  }
  // The agreed path: from the connection once the REP went or came, else
  // (a request not yet accepted) from its REQ, as accepting it agrees: the
  // smaller path MTU, the reads each side offered (at most the device's).
  dat::QpCmPath p;
  dat::Ep* ep = ep_of(id);
  const bool connected = ep != nullptr && dat::qp_cm_path(ep, &p).ok();
  dat::IaLinkInfo link;
  if (!connected && !dat::ia_link_info(id->dev->ia, &link).ok()) return fail(EINVAL);
  const wire::CmMessage cm_defaults;  // the ACK timeout and retry counts dpdat's REQ names
  {
    std::lock_guard<std::mutex> lk(g().mu);
    if (!connected) {
      if (id->st != St::kRequest || id->cr == nullptr) return fail(EINVAL);
      p.peer_ip = id->dst_ip;
      p.peer_qpn = id->req_qpn;
      p.rq_psn = id->req_psn;
      p.sq_psn = id->cr->start_psn;
      const uint32_t theirs = wire::cm_mtu_bytes(static_cast<uint8_t>(id->req_mtu));
      p.pmtu = theirs != 0 ? std::min(theirs, link.pmtu) : link.pmtu;
      p.responder_resources = std::min(id->req_rd, verbs::kMaxRdAtomic);
      p.initiator_depth = std::min(id->req_rr, verbs::kMaxRdAtomic);
    }
    if (want == IBV_QPS_RTS) {
      a.sq_psn = p.sq_psn;
      a.timeout =
          static_cast<uint8_t>(id->ack_timeout >= 0 ? id->ack_timeout : cm_defaults.ack_timeout);
      a.retry_cnt = cm_defaults.retry_count;
      a.rnr_retry = cm_defaults.rnr_retry;
      a.max_rd_atomic = static_cast<uint8_t>(std::min(p.initiator_depth, 255u));
      *attr = a;
      *mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
              IBV_QP_MAX_QP_RD_ATOMIC;
      return 0;
    }
  }
  const uint8_t mtu = wire::cm_mtu_enum(p.pmtu);
  a.path_mtu = mtu != 0 ? static_cast<ibv_mtu>(mtu) : IBV_MTU_1024;
  a.dest_qp_num = p.peer_qpn;
  a.rq_psn = p.rq_psn;
  a.max_dest_rd_atomic = static_cast<uint8_t>(std::min(p.responder_resources, 255u));
  a.min_rnr_timer = 12;  // 0.64 ms
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.grh.sgid_index = 0;
  a.ah_attr.grh.dgid.raw[10] = 0xFF;
  a.ah_attr.grh.dgid.raw[11] = 0xFF;
  const uint32_t be = htonl(p.peer_ip);
  std::memcpy(&a.ah_attr.grh.dgid.raw[12], &be, 4);
  *attr = a;
  *mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  return 0;
}
