// Queue pairs connected by attributes exchanged out of band (ops_qp_attr.hpp).

#include "ops_qp_attr.hpp"

#include <algorithm>
#include <condition_variable>

#include "wire/packet.hpp"

namespace dpdat::dat {

namespace {

// How often a neighbour is asked again while unresolved (the link sends at
// most one request per resolve() that misses).
constexpr uint64_t kResolveAskNs = 2'000'000;

static_assert(kQpAttrRts == static_cast<uint8_t>(QpAttrState::kRts));

QpAttrState stored(const Ep* ep) { return static_cast<QpAttrState>(ep->qp_attr_state); }
void store(Ep* ep, QpAttrState s) { ep->qp_attr_state = static_cast<uint8_t>(s); }

// Lock held.  The queue pair holds no send request (none handed off on the
// way to it either): SQD has drained.
bool sq_drained(const Ep* ep) {
  return ep->sends_posted.load(std::memory_order_acquire) == ep->sends_into_qp &&
         rc::qp::send_queue_used(*ep->qp) == 0;
}

// Lock held.  A queue pair in RTR that received a packet: COMM_EST, once.
void tell_comm_est(Iface* f, Ep* ep) {
  if (ep->comm_est_told || rc::qp::counters(*ep->qp).rx_packets == 0) return;
  ep->comm_est_told = true;
  f->async_event(ep->ia, EventNum::kProviderInternal, ep, kQpCommEstReason);
}

// Lock held.  The queue pair leaves RTR or SQD: nothing more to watch.
void unwatch(Iface* f, Ep* ep) {
  f->qp_attr_watch.erase(ep);
  ep->sq_draining = false;
}

// Lock held.  Flushes what the queue pair holds into its EVDs.
void flush(Iface* f, Ep* ep) {
  if (ep->qp == nullptr) return;
  const uint64_t now = now_ns();
  if (rc::qp::state(*ep->qp) != rc::QpState::kError)
    rc::qp::set_error(*ep->qp, rc::QpError::kDestroyed, now);
  f->progress(now, false);
}

// Lock held (let go while waiting).  Asks the link for ip's MAC until it
// answers or resolve_us passed.
bool resolve_mac(Iface* f, Lock& lk, uint32_t ip, uint64_t resolve_us, wire::MacAddr* mac) {
  uint64_t next_ask = 0;
  std::condition_variable_any cv;
  return wait_for(f, lk, cv, resolve_us, [&] {
    const uint64_t now = now_ns();
    if (now < next_ask) return false;
    next_ask = now + kResolveAskNs;
    return f->link->resolve(ip, mac);
  });
}

}  // namespace

bool qp_transition_ok(QpAttrState from, QpAttrState to) {
  using S = QpAttrState;
  if (to == S::kReset || to == S::kError) return true;
  switch (from) {
    case S::kReset:
      return to == S::kInit;
    case S::kInit:
      return to == S::kInit || to == S::kRtr;
    case S::kRtr:
      return to == S::kRts;
    case S::kRts:
      return to == S::kRts || to == S::kSqd;
    case S::kSqd:
      return to == S::kSqd || to == S::kRts;
    case S::kSqe:
      return to == S::kRts;
    case S::kError:
      return false;
  }
  return false;
}

QpAttrState qp_attr_state(const Ep* ep) {
  if (ep->qp != nullptr && rc::qp::state(*ep->qp) == rc::QpState::kError)
    return QpAttrState::kError;
  return stored(ep);
}

Status qp_to_init(Ep* ep) {
  Lock lk(ep->ia->iface);
  const QpAttrState cur = qp_attr_state(ep);
  if (!qp_transition_ok(cur, QpAttrState::kInit) || ep->qp == nullptr)
    return fail(Type::INVALID_STATE);
  store(ep, QpAttrState::kInit);
  return kOk;
}

Status qp_set_remote_access(Ep* ep, uint32_t privs) {
  Lock lk(ep->ia->iface);  // every token: the responder reads it
  if (ep->qp == nullptr) return fail(Type::INVALID_STATE);
  ep->remote_access = privs;  // and a queue pair made for the EP later (rehome_qp)
  rc::qp::set_remote_access(*ep->qp, privs);
  return kOk;
}

Status qp_to_rtr(Ep* ep, const QpPeer& peer, uint64_t resolve_us) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  if (qp_attr_state(ep) != QpAttrState::kInit || ep->qp == nullptr)
    return fail(Type::INVALID_STATE);
  if (!wire::is_valid_pmtu(peer.pmtu) || peer.pmtu > f->pmtu)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (peer.ip == 0 || peer.qpn == 0 || peer.qpn > 0xFFFFFFu)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  wire::MacAddr mac{};
  if (!resolve_mac(f, lk, peer.ip, resolve_us, &mac))
    return fail(Type::INVALID_ADDRESS, Sub::INVALID_ADDRESS_UNREACHABLE);
  // The lock was let go meanwhile: the EP may have moved on.
  if (qp_attr_state(ep) != QpAttrState::kInit || ep->qp == nullptr)
    return fail(Type::INVALID_STATE);
  // The send PSN comes with RTS (set_requester); until then nothing is sent.
  if (!f->connect_qp(ep, mac, peer.ip, peer.qpn, peer.pmtu, wire::Psn(0), wire::Psn(peer.rq_psn)))
    return fail(Type::INVALID_STATE);
  ep->peer_ip = peer.ip;
  ep->peer_mac = mac;
  ep->peer_qpn = peer.qpn;
  ep->peer_psn = peer.rq_psn;
  ep->path_pmtu = peer.pmtu;
  ep->state = EpState::kConnected;  // receives flow; the front refuses sends until RTS
  store(ep, QpAttrState::kRtr);
  ep->comm_est_told = false;
  f->qp_attr_watch.insert(ep);  // its first packet: COMM_EST
  return kOk;
}

Status qp_to_rts(Ep* ep, const QpRequester& req) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  const QpAttrState cur = qp_attr_state(ep);
  if (!qp_transition_ok(cur, QpAttrState::kRts) || ep->qp == nullptr)
    return fail(Type::INVALID_STATE);
  if (cur == QpAttrState::kRtr) {
    if (!rc::qp::set_requester(*ep->qp, wire::Psn(req.sq_psn & 0xFFFFFFu), req.retry_count,
                               req.rnr_retry, req.ack_timeout_ns))
      return fail(Type::INVALID_STATE);
    tell_comm_est(f, ep);  // a packet came in RTR since the last pass
  }
  unwatch(f, ep);  // SQD -> RTS: sends resume, drained or not (no SQ_DRAINED)
  store(ep, QpAttrState::kRts);
  return kOk;
}

Status qp_to_sqd(Ep* ep, bool notify) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  const QpAttrState cur = qp_attr_state(ep);
  if (!qp_transition_ok(cur, QpAttrState::kSqd) || ep->qp == nullptr)
    return fail(Type::INVALID_STATE);
  if (cur == QpAttrState::kSqd) return kOk;  // SQD -> SQD: draining goes on
  store(ep, QpAttrState::kSqd);
  ep->sq_draining = true;
  ep->sqd_notify = notify;
  f->qp_attr_watch.insert(ep);
  f->next_housekeeping.store(0, std::memory_order_relaxed);  // drained already, perhaps
  return kOk;
}

bool qp_sq_draining(Ep* ep) {
  Lock lk(ep->ia->iface);
  return qp_attr_state(ep) == QpAttrState::kSqd && ep->sq_draining;
}

void qp_attr_pass(Iface* f) {
  for (auto it = f->qp_attr_watch.begin(); it != f->qp_attr_watch.end();) {
    Ep* ep = *it;
    const QpAttrState s = qp_attr_state(ep);
    bool done =
        ep->qp == nullptr || ep->freeing || (s != QpAttrState::kRtr && s != QpAttrState::kSqd);
    if (!done && s == QpAttrState::kRtr) {
      tell_comm_est(f, ep);
      done = ep->comm_est_told;
    } else if (!done && sq_drained(ep)) {
      done = true;
      if (ep->sqd_notify)
        f->async_event(ep->ia, EventNum::kProviderInternal, ep, kQpSqDrainedReason);
    }
    if (!done) {
      ++it;
      continue;
    }
    if (s == QpAttrState::kSqd) ep->sq_draining = false;
    it = f->qp_attr_watch.erase(it);
  }
}

Status qp_to_error(Ep* ep) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  unwatch(f, ep);
  flush(f, ep);
  store(ep, QpAttrState::kError);
  return kOk;
}

Status qp_to_reset(Ep* ep, uint32_t* qpn) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  unwatch(f, ep);
  flush(f, ep);
  f->destroy_qp(ep);
  ep->state = EpState::kUnconnected;
  store(ep, QpAttrState::kReset);
  Status st = f->make_qp(ep);
  if (!st.ok()) return st;
  *qpn = rc::qp::number(*ep->qp);
  return kOk;
}

Status qp_free(Ep* ep) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  // No DREQ for a queue pair the CM never knew; one connected through the
  // CM (qp_cm_attach) tells its peer, as any EP freed while connected does.
  if (ep->conn_evd == nullptr) {
    flush(f, ep);
    ep->state = EpState::kDisconnected;
  }
  free_ep(ep);
  return kOk;
}

Status qp_cm_attach(Ep* ep, Evd* conn, uint16_t src_port) {
  Lock lk(ep->ia->iface);
  if (conn == nullptr || (conn->flags & evd_flag::kConnection) == 0 ||
      conn->ia->iface != ep->ia->iface)
    return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_CONN);
  const QpAttrState s = qp_attr_state(ep);
  if (ep->state != EpState::kUnconnected || ep->conn_evd != nullptr ||
      (s != QpAttrState::kReset && s != QpAttrState::kInit))
    return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  ep->conn_evd = conn;
  conn->refs++;
  ep->cm_attached = true;
  ep->cm_src_port = src_port;
  return kOk;
}

Status cm_ep_create(Ia* ia, Evd* conn, uint32_t qpn, uint32_t rd_in, uint32_t rd_out,
                    uint16_t src_port, Ep** out) {
  Iface* f = ia->iface;
  Lock lk(f);
  if (conn == nullptr || (conn->flags & evd_flag::kConnection) == 0 || conn->ia->iface != f)
    return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_CONN);
  if (qpn == 0 || qpn > 0xFFFFFFu) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (rd_in > f->limits.max_rdma_read_per_ep || rd_out > f->limits.max_rdma_read_per_ep)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  auto ep = std::make_unique<Ep>(ia);
  grant_sizes(f, &ep->attr);
  ep->attr.max_rdma_read_in = rd_in;
  ep->attr.max_rdma_read_out = rd_out;
  ep->conn_evd = conn;
  conn->refs++;
  ep->cm_qpn = qpn;
  ep->cm_src_port = src_port;
  Ep* raw = ep.release();
  adopt(ia, raw);
  *out = raw;
  return kOk;
}

Status ep_establish(Ep* ep) {
  Iface* f = ep->ia->iface;
  Lock lk(f);
  Status st = f->establish(ep);
  if (st.ok()) f->progress(now_ns(), true);
  return st;
}

Status qp_cm_path(Ep* ep, QpCmPath* out) {
  Lock lk(ep->ia->iface);
  const bool cm_only = ep->cm_qpn != 0;
  if ((!cm_only && (!ep->cm_attached || ep->qp == nullptr)) || ep->path_pmtu == 0)
    return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  out->peer_ip = ep->peer_ip;
  out->peer_qpn = ep->peer_qpn;
  out->sq_psn = ep->my_psn;
  out->rq_psn = ep->peer_psn;
  out->pmtu = ep->path_pmtu;
  out->responder_resources = std::min<uint32_t>(ep->attr.max_rdma_read_in, ep->peer_init_depth);
  out->initiator_depth = std::min<uint32_t>(ep->attr.max_rdma_read_out, ep->peer_resp_res);
  return kOk;
}

Status ia_resolve(Ia* ia, uint32_t ip, uint64_t timeout_us, wire::MacAddr* out) {
  Iface* f = ia->iface;
  Lock lk(f);
  if (ip == 0) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  wire::MacAddr mac{};
  wire::MacAddr* where = out != nullptr ? out : &mac;
  return resolve_mac(f, lk, ip, timeout_us, where)
             ? kOk
             : fail(Type::INVALID_ADDRESS, Sub::INVALID_ADDRESS_UNREACHABLE);
}

void qp_attr_errored(Ep* ep) {
  if (ep->freeing || ep->qp == nullptr) return;
  Iface* f = ep->ia->iface;
  if (rc::qp::error(*ep->qp) != rc::QpError::kDestroyed)
    f->async_event(ep->ia, EventNum::kEpBroken, ep, kEpTransferToErrorReason);
  if (ep->srq != nullptr) f->async_event(ep->ia, EventNum::kEpBroken, ep, kEpLastWqeReason);
}

uint32_t qp_number(const Ep* ep) { return ep->qp != nullptr ? rc::qp::number(*ep->qp) : 0; }

Status ia_link_info(Ia* ia, IaLinkInfo* out) {
  Iface* f = ia->iface;
  Lock lk(f);
  out->pmtu = f->pmtu;
  out->ip = f->cfg.ip;
  out->mac = f->link->mac();
  const Iface::Frames fr = f->frames();
  out->tx_frames = fr.tx;
  out->rx_frames = fr.rx;
  out->up = f->link->link_up();
  return kOk;
}

Status ia_link_events(Ia* ia, bool on) {
  Iface* f = ia->iface;
  Lock lk(f);
  if (ia->link_events == on) return kOk;
  ia->link_events = on;
  if (on) {
    // The state changes are told against: now, for the first watcher.
    if (f->link_watchers.empty()) f->link_state = f->link->link_up() ? 1 : 0;
    f->link_watchers.push_back(ia);
  } else {
    std::erase(f->link_watchers, ia);
  }
  return kOk;
}

}  // namespace dpdat::dat
