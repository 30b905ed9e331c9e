// RC queue pairs: creation, the verbs state machine (ibv_modify_qp onto
// ops_qp_attr.hpp), queries, destruction.

#include <arpa/inet.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "objects.hpp"

#define DPDAT_EXPORT extern "C" __attribute__((visibility("default")))

using namespace dpdat::verbs;  // NOLINT(google-build-using-namespace): the C entry points
namespace dat = dpdat::dat;
namespace rc = dpdat::rc;

namespace {

ibv_qp* fail_qp(int e) {
  errno = e;
  return nullptr;
}

uint32_t mtu_bytes(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

// The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d); false otherwise.
bool gid_ipv4(const ibv_gid& g, uint32_t* ip) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  if (std::memcmp(g.raw, kPrefix, sizeof(kPrefix)) != 0) return false;
  uint32_t be = 0;
  std::memcpy(&be, &g.raw[12], 4);
  *ip = ntohl(be);
  return *ip != 0;
}

// IBA's local ACK timeout: 4.096 us * 2^timeout (0: none, then the
// interface's own retransmission timeout applies).
uint64_t ack_timeout_ns(uint8_t t) {
  if (t == 0) return 0;
  return uint64_t{4096} << std::min<uint8_t>(t, 31);
}

// Attributes each transition requires (IBA 11.2.4.2, ibv_modify_qp(3)) and
// those it may carry, for RC.
struct Masks {
  int required, optional;
};
Masks masks_for(dat::QpAttrState from, dat::QpAttrState to) {
  using S = dat::QpAttrState;
  if (to == S::kReset || to == S::kError) return {IBV_QP_STATE, 0};
  if (from == S::kReset && to == S::kInit)
    return {IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0};
  if (from == S::kInit && to == S::kInit)
    return {IBV_QP_STATE, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS};
  if (from == S::kInit && to == S::kRtr)
    return {IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
            IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX};
  if (from == S::kRtr && to == S::kRts)
    return {IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_MAX_QP_RD_ATOMIC,
            IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                IBV_QP_PATH_MIG_STATE};
  if (from == S::kRts && to == S::kSqd) return {IBV_QP_STATE, IBV_QP_EN_SQD_ASYNC_NOTIFY};
  if (from == S::kSqd && to == S::kSqd)
    return {IBV_QP_STATE, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                              IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_PKEY_INDEX |
                              IBV_QP_PORT | IBV_QP_AV | IBV_QP_MAX_QP_RD_ATOMIC |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                              IBV_QP_RNR_RETRY};
  // RTS -> RTS, SQE -> RTS, SQD -> RTS
  return {IBV_QP_STATE, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                            IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE};
}

int check_av(const ibv_ah_attr& ah, uint32_t* ip) {
  // RoCE: every path has a GRH, whose destination GID names the peer.
  if (ah.is_global == 0 || ah.port_num != 1) return EINVAL;
  if (ah.grh.sgid_index != 0) return EINVAL;
  if (!gid_ipv4(ah.grh.dgid, ip)) return EINVAL;
  return 0;
}

ibv_qp_state ud_state(Qp* q) {
  switch (dat::ud_state(q->udq)) {
    case rc::UdState::kReset:
      return IBV_QPS_RESET;
    case rc::UdState::kInit:
      return IBV_QPS_INIT;
    case rc::UdState::kRtr:
      return IBV_QPS_RTR;
    case rc::UdState::kRts:
      return IBV_QPS_RTS;
    case rc::UdState::kError:
      break;
  }
  return IBV_QPS_ERR;
}

// The UD transitions (ibv_modify_qp(3)'s table for UD): RESET -> INIT with
// P_Key index, port and Q_Key; INIT -> RTR; RTR -> RTS with the SQ PSN; the
// Q_Key may change in INIT, RTR and RTS; any state -> RESET or ERR.
int modify_ud(Qp* q, ibv_qp_attr* attr, int mask) {
  const ibv_qp_state cur = ud_state(q);
  if ((mask & IBV_QP_CUR_STATE) != 0 && attr->cur_qp_state != cur) return EINVAL;
  const ibv_qp_state to = (mask & IBV_QP_STATE) != 0 ? attr->qp_state : cur;
  if ((mask & IBV_QP_STATE) == 0 && (cur == IBV_QPS_RESET || cur == IBV_QPS_ERR)) return EINVAL;
  int required = 0, optional = 0;
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
  } else if (cur == IBV_QPS_RESET && to == IBV_QPS_INIT) {
    required = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
  } else if (cur == IBV_QPS_INIT && to == IBV_QPS_INIT) {
    optional = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
  } else if (cur == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    optional = IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
  } else if (cur == IBV_QPS_RTR && to == IBV_QPS_RTS) {
    required = IBV_QP_SQ_PSN;
    optional = IBV_QP_QKEY;
  } else if (cur == IBV_QPS_RTS && to == IBV_QPS_RTS) {
    optional = IBV_QP_QKEY;
  } else {
    return EINVAL;
  }
  const int always = IBV_QP_STATE | IBV_QP_CUR_STATE;
  if ((mask & required) != required || (mask & ~(required | optional | always)) != 0) return EINVAL;
  if ((mask & IBV_QP_PORT) != 0 && attr->port_num != 1) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) != 0 && attr->pkey_index != 0) return EINVAL;
  dat::Status st = dat::kOk;
  if (to == IBV_QPS_RESET) {
    st = dat::ud_to_reset(q->udq);
  } else if (to == IBV_QPS_ERR) {
    st = dat::ud_to_error(q->udq);
  } else if (cur == IBV_QPS_RESET) {
    st = dat::ud_to_init(q->udq, attr->qkey);
  } else {
    if ((mask & IBV_QP_QKEY) != 0) st = dat::ud_set_qkey(q->udq, attr->qkey);
    if (st.ok() && cur == IBV_QPS_INIT && to == IBV_QPS_RTR) st = dat::ud_to_rtr(q->udq);
    if (st.ok() && cur == IBV_QPS_RTR) st = dat::ud_to_rts(q->udq, attr->sq_psn);
  }
  if (!st.ok()) return to_errno(st);
  ibv_qp_attr& s = q->attr;
  if (to == IBV_QPS_RESET) {
    const ibv_qp_cap cap = q->cap;
    s = ibv_qp_attr{};
    s.cap = cap;
  }
  if ((mask & IBV_QP_PKEY_INDEX) != 0) s.pkey_index = attr->pkey_index;
  if ((mask & IBV_QP_PORT) != 0) s.port_num = attr->port_num;
  if ((mask & IBV_QP_QKEY) != 0) s.qkey = attr->qkey;
  if ((mask & IBV_QP_SQ_PSN) != 0) s.sq_psn = attr->sq_psn & 0xFFFFFFu;
  s.qp_state = to;
  q->qp.state = to;
  return 0;
}

}  // namespace

DPDAT_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  if (pd == nullptr || init == nullptr) return fail_qp(EINVAL);
  if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UD) return fail_qp(EOPNOTSUPP);
  if (init->send_cq == nullptr || (init->recv_cq == nullptr && init->srq == nullptr))
    return fail_qp(EINVAL);
  // Every object of a QP is of its PD's context: another context's CQ or
  // SRQ is no object of this one (its IA may even be on another interface).
  ibv_context* c = pd->context;
  if (init->send_cq->context != c || (init->recv_cq != nullptr && init->recv_cq->context != c) ||
      (init->srq != nullptr && init->srq->context != c))
    return fail_qp(EINVAL);
  ibv_qp_cap& cap = init->cap;
  if (cap.max_send_wr > kMaxWr || cap.max_recv_wr > kMaxWr || cap.max_send_sge > kMaxSge ||
      cap.max_recv_sge > kMaxSge || cap.max_inline_data > kMaxInline)
    return fail_qp(EINVAL);
  auto* p = reinterpret_cast<Pd*>(pd);
  auto* scq = reinterpret_cast<Cq*>(init->send_cq);
  auto* rcq = reinterpret_cast<Cq*>(init->recv_cq != nullptr ? init->recv_cq : init->send_cq);
  auto* srq = reinterpret_cast<Srq*>(init->srq);
  dat::EpAttr a;
  a.max_request_dtos = std::max(cap.max_send_wr, 1u);
  a.max_recv_dtos = std::max(cap.max_recv_wr, 1u);
  a.max_request_iov = std::max(cap.max_send_sge, 1u);
  a.max_recv_iov = std::max(cap.max_recv_sge, 1u);
  a.max_rdma_read_iov = a.max_request_iov;
  a.max_rdma_write_iov = a.max_request_iov;
  a.max_rdma_read_in = kMaxRdAtomic;
  a.max_rdma_read_out = kMaxRdAtomic;
  auto* q = std::make_unique<Qp>().release();
  q->pd = p;
  q->scq = scq;
  q->rcq = rcq;
  q->srq = srq;
  q->ud = init->qp_type == IBV_QPT_UD;
  dat::Status st = dat::kOk;
  if (q->ud) {
    // UD receives come from the QP's own queue (no SRQ for UD here).
    if (srq != nullptr) {
      delete q;
      return fail_qp(EOPNOTSUPP);
    }
    st = dat::ud_create(p->pz->ia, p->pz, rcq->evd, scq->evd, a.max_recv_dtos, a.max_request_dtos,
                        &q->udq);
  } else {
    st = dat::ep_create(p->pz->ia, p->pz, rcq->evd, scq->evd, nullptr, &a, &q->ep,
                        srq != nullptr ? srq->s : nullptr);
  }
  if (!st.ok()) {
    delete q;
    return fail_qp(to_errno(st));
  }
  if (q->ep != nullptr) {
    q->ep->context = reinterpret_cast<uintptr_t>(q);
    q->ep->context_set = true;
  }
  if (cap.max_inline_data > 0) {
    // One slot per request that can be outstanding, and one more.
    q->inline_slots = a.max_request_dtos + 2;
    q->inline_buf.resize(size_t{q->inline_slots} * kMaxInline);
    dat::LmrSpec spec;
    spec.host = q->inline_buf.data();
    spec.va = reinterpret_cast<uintptr_t>(spec.host);
    spec.length = q->inline_buf.size();
    st = dat::lmr_create(p->pz->ia, p->pz, spec, rc::priv::kLocalRead, &q->inline_lmr);
    if (!st.ok()) {
      if (q->udq != nullptr) {
        (void)dat::ud_free(q->udq);
      } else {
        (void)dat::qp_free(q->ep);
      }
      delete q;
      return fail_qp(to_errno(st));
    }
  }
  q->cap = cap;
  q->cap.max_send_wr = a.max_request_dtos;
  q->cap.max_recv_wr = srq != nullptr ? 0 : a.max_recv_dtos;
  q->cap.max_send_sge = a.max_request_iov;
  q->cap.max_recv_sge = srq != nullptr ? 0 : a.max_recv_iov;
  cap = q->cap;
  q->sq_sig_all = init->sq_sig_all != 0;
  scq->qps++;
  rcq->qps++;
  ibv_qp& v = q->qp;
  v.context = pd->context;
  v.qp_context = init->qp_context;
  v.pd = pd;
  v.send_cq = init->send_cq;
  v.recv_cq = &rcq->cq;
  v.srq = init->srq;
  v.qp_num = q->udq != nullptr ? q->udq->qpn : dat::qp_number(q->ep);
  v.handle = v.qp_num;
  v.state = IBV_QPS_RESET;
  v.qp_type = init->qp_type;
  pthread_mutex_init(&v.mutex, nullptr);
  pthread_cond_init(&v.cond, nullptr);
  q->attr.qp_state = IBV_QPS_RESET;
  q->attr.cap = q->cap;
  if (q->ep != nullptr) {
    async_register(ctx_of(pd->context), q->ep, q, nullptr);
  } else {
    Context* ctx = ctx_of(pd->context);
    std::lock_guard<std::mutex> g(ctx->async_mu);
    ctx->ud_qps.push_back(q);
  }
  return &v;
}

DPDAT_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
  if (qp == nullptr) return EINVAL;
  auto* q = reinterpret_cast<Qp*>(qp);
  if (q->cm_gone != nullptr) q->cm_gone(q);
  if (q->udq != nullptr) {
    if (stats_wanted()) {
      const rc::UdCounters c = dat::ud_counters(q->udq);
      std::fprintf(
          stderr,
          "dpdat-verbs-ud: QP 0x%x tx %llu (waited %llu) rx %llu dropped: no receive %llu, "
          "Q_Key %llu, state %llu, CQ full %llu; too long %llu\n",
          qp->qp_num, static_cast<unsigned long long>(c.tx_datagrams),
          static_cast<unsigned long long>(c.tx_waited),
          static_cast<unsigned long long>(c.rx_datagrams),
          static_cast<unsigned long long>(c.rx_no_recv_dropped),
          static_cast<unsigned long long>(c.rx_qkey_dropped),
          static_cast<unsigned long long>(c.rx_state_dropped),
          static_cast<unsigned long long>(c.rx_cq_full_dropped),
          static_cast<unsigned long long>(c.rx_too_long));
    }
    const dat::Status st = dat::ud_free(q->udq);
    if (!st.ok()) return to_errno(st);
    Context* ctx = ctx_of(qp->context);
    std::lock_guard<std::mutex> g(ctx->async_mu);
    std::erase(ctx->ud_qps, q);
  } else {
    const dat::Ep* ep = q->ep;
    const dat::Status st = dat::qp_free(q->ep);
    if (!st.ok()) return to_errno(st);
    async_forget(ctx_of(qp->context), ep, qp);  // no event names it any more
    // Nor does a completion: dat_core took its events out of the CQs' EVDs;
    // those a CQ's channel agent already took for solicited-only arming go
    // as well.  (Compared by address only: the EP is gone.)
    for (Cq* cq : {q->scq, q->rcq}) {
      if (cq->channel == nullptr) continue;
      std::lock_guard<std::recursive_mutex> g(cq->mu);
      std::erase_if(cq->staged, [ep](const dat::Event& e) { return e.ep == ep; });
    }
  }
  // After the queue pair: its inline requests read from this region.
  if (q->inline_lmr != nullptr) (void)dat::lmr_free(q->inline_lmr);
  q->scq->qps--;
  q->rcq->qps--;
  pthread_cond_destroy(&qp->cond);
  pthread_mutex_destroy(&qp->mutex);
  delete q;
  return 0;
}

DPDAT_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if (qp == nullptr || attr == nullptr) return EINVAL;
  auto* q = reinterpret_cast<Qp*>(qp);
  if (q->ud) return modify_ud(q, attr, mask);
  using S = dat::QpAttrState;
  const S cur = dat::qp_attr_state(q->ep);
  if ((mask & IBV_QP_CUR_STATE) != 0 && static_cast<S>(attr->cur_qp_state) != cur) return EINVAL;
  const S to = (mask & IBV_QP_STATE) != 0 ? static_cast<S>(attr->qp_state) : cur;
  if (static_cast<int>(to) > static_cast<int>(S::kError)) return EINVAL;
  if ((mask & IBV_QP_STATE) == 0 && (cur == S::kReset || cur == S::kError)) return EINVAL;
  if (!dat::qp_transition_ok(cur, to)) return EINVAL;
  const Masks m = masks_for(cur, to);
  const int given = mask | ((mask & IBV_QP_STATE) == 0 ? IBV_QP_STATE : 0);
  if ((given & m.required) != m.required || (given & ~(m.required | m.optional)) != 0)
    return EINVAL;
  if ((mask & IBV_QP_PORT) != 0 && attr->port_num != 1) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) != 0 && attr->pkey_index != 0) return EINVAL;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) != 0 && attr->max_rd_atomic > kMaxRdAtomic) return EINVAL;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) != 0 && attr->max_dest_rd_atomic > kMaxRdAtomic)
    return EINVAL;
  if ((mask & IBV_QP_RETRY_CNT) != 0 && attr->retry_cnt > 7) return EINVAL;
  if ((mask & IBV_QP_RNR_RETRY) != 0 && attr->rnr_retry > 7) return EINVAL;
  if ((mask & IBV_QP_TIMEOUT) != 0 && attr->timeout > 31) return EINVAL;
  if ((mask & IBV_QP_MIN_RNR_TIMER) != 0 && attr->min_rnr_timer > 31) return EINVAL;
  if ((mask & IBV_QP_ALT_PATH) != 0) return EOPNOTSUPP;  // one path, no migration
  if (cur == S::kSqd && to == S::kSqd) {
    // SQD -> SQD: a new path or requester budgets would need the queue
    // pair's path and requester set anew, which dpdat does not do.
    if ((mask & (IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY)) != 0)
      return EOPNOTSUPP;
    // IBA: attributes change in SQD only once the send queue has drained.
    if ((mask & ~(IBV_QP_STATE | IBV_QP_CUR_STATE)) != 0 && dat::qp_sq_draining(q->ep))
      return EBUSY;
  }
  dat::Status st = dat::kOk;
  if (to == S::kReset) {
    uint32_t qpn = 0;
    st = dat::qp_to_reset(q->ep, &qpn);
    if (st.ok()) {
      qp->qp_num = qpn;
      qp->handle = qpn;
      const ibv_qp_cap cap = q->cap;
      q->attr = ibv_qp_attr{};
      q->attr.cap = cap;
    }
  } else if (to == S::kError) {
    st = dat::qp_to_error(q->ep);
  } else if (to == S::kInit) {
    st = dat::qp_to_init(q->ep);
  } else if (to == S::kRtr) {
    dat::QpPeer peer;
    if (const int e = check_av(attr->ah_attr, &peer.ip); e != 0) return e;
    peer.qpn = attr->dest_qp_num;
    peer.rq_psn = attr->rq_psn & 0xFFFFFFu;
    peer.pmtu = mtu_bytes(attr->path_mtu);
    if (peer.pmtu == 0) return EINVAL;
    st = dat::qp_to_rtr(q->ep, peer, kResolveUs);
  } else if (to == S::kRts) {
    dat::QpRequester r;
    r.sq_psn = (mask & IBV_QP_SQ_PSN) != 0 ? attr->sq_psn & 0xFFFFFFu : q->attr.sq_psn;
    r.retry_count = (mask & IBV_QP_RETRY_CNT) != 0 ? attr->retry_cnt : q->attr.retry_cnt;
    r.rnr_retry = (mask & IBV_QP_RNR_RETRY) != 0 ? attr->rnr_retry : q->attr.rnr_retry;
    r.ack_timeout_ns =
        ack_timeout_ns((mask & IBV_QP_TIMEOUT) != 0 ? attr->timeout : q->attr.timeout);
    st = dat::qp_to_rts(q->ep, r);
  } else if (to == S::kSqd) {
    const bool notify = cur == S::kRts && (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) != 0 &&
                        attr->en_sqd_async_notify != 0;
    st = dat::qp_to_sqd(q->ep, notify);
  }
  if (!st.ok()) return to_errno(st);
  if ((mask & IBV_QP_ACCESS_FLAGS) != 0) {
    // The responder takes only the remote operations the QP allows, as
    // well as those its memory region allows.
    const unsigned a = attr->qp_access_flags;
    uint32_t privs = 0;
    if ((a & IBV_ACCESS_REMOTE_READ) != 0) privs |= rc::priv::kRemoteRead;
    if ((a & IBV_ACCESS_REMOTE_WRITE) != 0) privs |= rc::priv::kRemoteWrite;
    if ((a & IBV_ACCESS_REMOTE_ATOMIC) != 0) privs |= rc::priv::kRemoteAtomic;
    st = dat::qp_set_remote_access(q->ep, privs);
    if (!st.ok()) return to_errno(st);
  }
  // Remember what was set, for ibv_query_qp.
  ibv_qp_attr& s = q->attr;
  if ((mask & IBV_QP_ACCESS_FLAGS) != 0) s.qp_access_flags = attr->qp_access_flags;
  if ((mask & IBV_QP_PKEY_INDEX) != 0) s.pkey_index = attr->pkey_index;
  if ((mask & IBV_QP_PORT) != 0) s.port_num = attr->port_num;
  if ((mask & IBV_QP_AV) != 0) s.ah_attr = attr->ah_attr;
  if ((mask & IBV_QP_PATH_MTU) != 0) s.path_mtu = attr->path_mtu;
  if ((mask & IBV_QP_DEST_QPN) != 0) s.dest_qp_num = attr->dest_qp_num;
  if ((mask & IBV_QP_RQ_PSN) != 0) s.rq_psn = attr->rq_psn & 0xFFFFFFu;
  if ((mask & IBV_QP_SQ_PSN) != 0) s.sq_psn = attr->sq_psn & 0xFFFFFFu;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) != 0) s.max_dest_rd_atomic = attr->max_dest_rd_atomic;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) != 0) s.max_rd_atomic = attr->max_rd_atomic;
  if ((mask & IBV_QP_MIN_RNR_TIMER) != 0) s.min_rnr_timer = attr->min_rnr_timer;
  if ((mask & IBV_QP_TIMEOUT) != 0) s.timeout = attr->timeout;
  if ((mask & IBV_QP_RETRY_CNT) != 0) s.retry_cnt = attr->retry_cnt;
  if ((mask & IBV_QP_RNR_RETRY) != 0) s.rnr_retry = attr->rnr_retry;
  if ((mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) != 0) s.en_sqd_async_notify = attr->en_sqd_async_notify;
  s.qp_state = static_cast<ibv_qp_state>(to);
  qp->state = s.qp_state;
  return 0;
}

DPDAT_EXPORT int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  if (qp == nullptr || attr == nullptr || init == nullptr) return EINVAL;
  (void)mask;  // everything is known: all of it is reported
  auto* q = reinterpret_cast<Qp*>(qp);
  *attr = q->attr;
  attr->qp_state = q->ud ? ud_state(q) : static_cast<ibv_qp_state>(dat::qp_attr_state(q->ep));
  attr->cur_qp_state = attr->qp_state;
  attr->cap = q->cap;
  attr->sq_draining = !q->ud && attr->qp_state == IBV_QPS_SQD && dat::qp_sq_draining(q->ep) ? 1 : 0;
  qp->state = attr->qp_state;
  *init = ibv_qp_init_attr{};
  init->qp_context = qp->qp_context;
  init->send_cq = qp->send_cq;
  init->recv_cq = qp->recv_cq;
  init->srq = qp->srq;
  init->cap = q->cap;
  init->qp_type = q->ud ? IBV_QPT_UD : IBV_QPT_RC;
  init->sq_sig_all = q->sq_sig_all ? 1 : 0;
  return 0;
}

// No ibv_wr_* interface: applications fall back to ibv_post_send.
DPDAT_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp*) {
  errno = EOPNOTSUPP;
  return nullptr;
}

DPDAT_EXPORT int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) {
  return 0;  // no guarantee that data lands in order (selective repeat places it by offset)
}
