// Connection manager: what consumers start (connect, accept, reject,
// disconnect) and the messages and events every part of the CM sends.

#include "cm.hpp"
#include "ops.hpp"  // ep_state_sub
#include "rc/engine/engine_group.hpp"
#include "wire/packet.hpp"

namespace dpdat::dat {

using namespace cm;  // NOLINT(google-build-using-namespace): the CM's own constants

void Iface::send_cm(const wire::MacAddr& mac, uint32_t ip, const wire::CmMessage& m) {
  for (auto& [kind, left] : cm_drops)  // fault injection (cm_drop=): lost on the way
    if (kind == m.type && left > 0) {
      --left;
      return;
    }
  wire::CmPath path;
  path.src_mac = link->mac();
  path.dst_mac = mac;
  path.src_ip = cfg.ip;
  path.dst_ip = ip;
  path.udp_src_port = 0xC001;
  // Under TX back-pressure the message is lost like on a lossy link: REQ,
  // REP and DREQ are retransmitted; RTU, REJ and DREP are repeated when the
  // peer retransmits what they answer.
  (void)engine->send_gsi(path, m);
}

void Iface::send_rej(const wire::MacAddr& mac, uint32_t ip, const wire::CmMessage& req,
                     wire::CmRejReason why, const uint8_t* pdata, uint32_t len) {
  wire::CmMessage r;
  r.type = wire::CmMsg::kRej;
  r.tid = req.tid;
  r.local_comm_id = 0;
  r.remote_comm_id = req.local_comm_id;
  r.rej_reason = why;
  r.rej_msg = 0;  // rejecting a REQ
  set_pdata(r, pdata, len);
  send_cm(mac, ip, r);
  PassiveRec& rec = passive[(uint64_t{ip} << 32) | req.local_comm_id];
  rec.cr = nullptr;
  rec.ep = nullptr;
  rec.rejected = true;
  rec.rej = r;
  rec.expires = now_ns() + kPassiveRecordNs;
  passive_expiry.emplace_back(rec.expires, (uint64_t{ip} << 32) | req.local_comm_id);
}

void Iface::send_rej_rep(const Ep* ep) {
  wire::CmMessage r;
  r.type = wire::CmMsg::kRej;
  r.tid = ep->out_msg.tid;  // the REQ's, which the REP repeats
  r.local_comm_id = ep->local_comm;
  r.remote_comm_id = ep->remote_comm;
  r.rej_reason = wire::CmRejReason::kConsumerReject;
  r.rej_msg = wire::kCmMsgRep;
  send_cm(ep->peer_mac, ep->peer_ip, r);
}

void Iface::conn_event(Ep* ep, EventNum n, const uint8_t* pdata, uint32_t len,
                       uint32_t rej_reason) {
  if (ep->conn_evd == nullptr) return;
  Event ev;
  ev.num = n;
  ev.evd = ep->conn_evd;
  ev.ep = ep;
  ev.reason = rej_reason;
  if (len > 0) {
    ev.pdata_buf = std::make_unique<const std::vector<uint8_t>>(pdata, pdata + len);
    ev.pdata_len = len;
    ev.pdata = ev.pdata_buf->data();
  }
  deliver(ep->conn_evd, std::move(ev));
}

// The one way an EP leaves a connection or a connection attempt: its queue
// pair goes to error, so every posted receive and every outstanding request
// completes as DAT_DTO_ERR_FLUSHED on its EVD (dat_ep_disconnect: "upon
// disconnect, all outstanding and in-progress DTOs and RMR Binds must be
// completed"), then the EP is DISCONNECTED and the connection event `n`
// (with the peer's private data, if any) is delivered.
void Iface::finish_disconnect(Ep* ep, EventNum n, const uint8_t* pdata, uint32_t len,
                              uint32_t rej_reason) {
  if (ep->qp != nullptr && rc::qp::state(*ep->qp) != rc::QpState::kError)
    rc::qp::set_error(*ep->qp, rc::QpError::kDestroyed, now_ns());
  ep->state = EpState::kDisconnected;
  ep->cm = CmState::kDone;
  watched.erase(ep);
  conn_event(ep, n, pdata, len, rej_reason);
  // An SRQ EP takes no more receives from its SRQ (what verbs calls "last
  // WQE reached"): consumers wait for this before freeing such an EP.  A
  // verbs QP (qp_cm_attach) gets verbs' reason, kept apart from QP_FATAL.
  if (ep->srq != nullptr && !ep->freeing)
    async_event(ep->ia, EventNum::kEpBroken, ep,
                ep->cm_attached ? kEpLastWqeReason : kEpTransferToErrorReason);
}

Status Iface::connect(Ep* ep, uint32_t ip, uint64_t conn_qual, uint64_t timeout_us,
                      const uint8_t* pdata, uint32_t pdata_len) {
  if (pdata_len > wire::kCmReqPdata) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  if (ep->qp == nullptr && ep->cm_qpn == 0) {
    Status st = make_qp(ep);
    if (!st.ok()) return st;
  }
  const uint64_t now = now_ns();
  ep->peer_ip = ip;
  ep->conn_qual = conn_qual;
  ep->my_psn = random32() & 0xFFFFFFu;
  ep->local_comm = next_comm++;
  ep->remote_comm = 0;
  ep_by_comm[ep->local_comm] = ep;
  wire::CmMessage& m = ep->out_msg;
  m = wire::CmMessage{};
  m.type = wire::CmMsg::kReq;
  m.tid = (uint64_t{cfg.ip} << 32) | ep->local_comm;
  m.local_comm_id = ep->local_comm;
  m.service_id = conn_qual;
  m.ca_guid = guid_of(link->mac());
  m.qpn = cm_qpn_of(*ep);
  m.start_psn = ep->my_psn;
  m.responder_resources = static_cast<uint8_t>(std::min(ep->attr.max_rdma_read_in, 255u));
  m.initiator_depth = static_cast<uint8_t>(std::min(ep->attr.max_rdma_read_out, 255u));
  m.path_mtu = wire::cm_mtu_enum(pmtu);
  m.src_ip = cfg.ip;
  m.dst_ip = ip;
  m.src_port = ep->cm_src_port;
  set_pdata(m, pdata, pdata_len);
  ep->state = EpState::kActivePending;
  ep->cm = CmState::kResolving;
  ep->deadline = timeout_us == UINT64_MAX ? 0 : now + timeout_us * 1000;
  ep->next_retx = now;
  ep->retx_interval = kArpRetryNs;
  ep->retries = 0;
  watched.insert(ep);
  next_housekeeping.store(0);  // resolve / send at once
  return kOk;
}

void Iface::send_out(Ep* ep, uint64_t now) {
  send_cm(ep->peer_mac, ep->peer_ip, ep->out_msg);
  ep->next_retx = now + ep->retx_interval;
  ep->retx_interval = std::min(ep->retx_interval * 2, kCmRetxMaxNs);
}

Status Iface::accept(Cr* cr, Ep* ep, const uint8_t* pdata, uint32_t pdata_len) {
  if (pdata_len > wire::kCmRepPdata) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  if (ep == nullptr) ep = cr->ep;
  if (ep == nullptr) return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (ep->qp == nullptr && ep->cm_qpn == 0) {
    if (ep->pz == nullptr) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_NOTREADY);
    Status st = make_qp(ep);
    if (!st.ok()) return st;
  }
  // Receive steering: on a link that delivers each frame on the queue it was
  // sent from (net_memif, net_ring), the peer's frames arrive on the queue
  // of its engine index (its QPN's engine bits): the queue pair goes to this
  // side's engine of that index, so no frame of the connection is handed
  // between engines.  A verbs queue pair keeps its place: its number is
  // already the application's.
  if (shards.size() > 1 && !ep->cm_attached && ep->qp != nullptr)
    (void)rehome_qp(ep, *shards[rc::EngineGroup::owner(cr->req.qpn) % shards.size()]);
  const uint64_t now = now_ns();
  ep->my_psn = cr->start_psn;
  const uint32_t path_pmtu = agreed_pmtu(pmtu, cr->req.path_mtu);
  // A CM-only EP has no queue pair: the application connects its own.
  if (ep->qp != nullptr) {
    if (!connect_qp(ep, cr->peer_mac, cr->peer_ip, cr->req.qpn, path_pmtu, wire::Psn(ep->my_psn),
                    wire::Psn(cr->req.start_psn)))
      return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_NOTREADY);
  }
  ep->peer_ip = cr->peer_ip;
  ep->peer_mac = cr->peer_mac;
  ep->peer_qpn = cr->req.qpn;
  ep->peer_psn = cr->req.start_psn;
  ep->path_pmtu = path_pmtu;
  ep->peer_resp_res = cr->req.responder_resources;
  ep->peer_init_depth = cr->req.initiator_depth;
  ep->conn_qual = cr->conn_qual;
  ep->local_comm = next_comm++;
  ep->remote_comm = cr->req.local_comm_id;
  ep_by_comm[ep->local_comm] = ep;
  wire::CmMessage& m = ep->out_msg;
  m = wire::CmMessage{};
  m.type = wire::CmMsg::kRep;
  m.tid = cr->req.tid;
  m.local_comm_id = ep->local_comm;
  m.remote_comm_id = ep->remote_comm;
  m.ca_guid = guid_of(link->mac());
  m.qpn = cm_qpn_of(*ep);
  m.start_psn = ep->my_psn;
  m.responder_resources = static_cast<uint8_t>(std::min(ep->attr.max_rdma_read_in, 255u));
  m.initiator_depth = static_cast<uint8_t>(std::min(ep->attr.max_rdma_read_out, 255u));
  m.path_mtu = wire::cm_mtu_enum(path_pmtu);
  set_pdata(m, pdata, pdata_len);
  send_cm(ep->peer_mac, ep->peer_ip, m);
  ep->state = EpState::kPassivePending;
  if (ep->qp != nullptr) ep->qp_attr_state = kQpAttrRts;  // verbs: RTS before the REP goes
  ep->cm = CmState::kRepSent;
  ep->retx_interval = kCmRetxNs;
  ep->next_retx = now + ep->retx_interval;
  ep->retries = 0;
  watched.insert(ep);
  housekeep_by(ep->next_retx);
  const uint64_t key = (uint64_t{cr->peer_ip} << 32) | cr->req.local_comm_id;
  if (cr->ep == ep) cr->ep = nullptr;  // now owned by the connection, not the CR
  drop_cr(cr);
  PassiveRec& rec = passive[key];
  rec = PassiveRec{};
  rec.ep = ep;
  rec.expires = now + kPassiveRecordNs;
  passive_expiry.emplace_back(rec.expires, key);
  return kOk;
}

Status Iface::establish(Ep* ep) {
  if (ep->cm_qpn == 0 || ep->cm != CmState::kRepRcvd)
    return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  wire::CmMessage rtu;
  rtu.type = wire::CmMsg::kRtu;
  rtu.tid = ep->out_msg.tid;  // the REQ's, which the REP repeats
  rtu.local_comm_id = ep->local_comm;
  rtu.remote_comm_id = ep->remote_comm;
  send_cm(ep->peer_mac, ep->peer_ip, rtu);
  ep->cm = CmState::kEstablished;
  ep->state = EpState::kConnected;
  return kOk;
}

Status Iface::reject(Cr* cr, const uint8_t* pdata, uint32_t pdata_len) {
  if (pdata_len > wire::kCmRejPdata) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  send_rej(cr->peer_mac, cr->peer_ip, cr->req, wire::CmRejReason::kConsumerReject, pdata,
           pdata_len);
  if (cr->ep != nullptr) {
    if (cr->sp != nullptr && cr->sp->type == HandleType::kRsp) cr->ep->state = EpState::kReserved;
  }
  drop_cr(cr);
  return kOk;
}

Status Iface::disconnect(Ep* ep, bool abrupt) {
  const uint64_t now = now_ns();
  switch (ep->state) {
    case EpState::kUnconnected:
    case EpState::kReserved:
      return fail(Type::INVALID_STATE, ep->state == EpState::kReserved
                                           ? Sub::INVALID_STATE_EP_RESERVED
                                           : Sub::INVALID_STATE_EP_UNCONNECTED);
    case EpState::kDisconnected:
      return kOk;
    case EpState::kTentativePending:
      return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_TENTCONNPENDING);
    case EpState::kActivePending:
      // Abandon the attempt: a REP that still arrives finds no REQ pending
      // and the peer's accept times out (ACCEPT_COMPLETION_ERROR there).  A
      // REP already here (a CM-only EP not yet established) is rejected, so
      // the peer knows at once.
      if (ep->cm == CmState::kRepRcvd) send_rej_rep(ep);
      finish_disconnect(ep, EventNum::kDisconnected);
      return kOk;
    case EpState::kDisconnectPending:
      if (!abrupt) return kOk;  // a second graceful disconnect has no effect
      break;
    case EpState::kPassivePending:
      // Before the consumer answers the request (an RSP's EP: the CR is
      // pending, nothing sent, the EP's peer fields still those of any earlier
      // connection) this is DAT_EP_STATE_PASSIVE_CONNECTION_PENDING, where
      // dat_ep_disconnect "is disallowed": the CR is accepted or rejected.
      if (ep->cm != CmState::kRepSent)
        return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_PASSCONNPENDING);
      // Accepted, RTU not yet in (COMPLETION_PENDING): either flag "aborts
      // the connection establishment" and the EP is DISCONNECTED at once.
      abrupt = true;
      break;
    case EpState::kConnected:
      break;
  }
  if (abrupt) {
    if (ep->cm != CmState::kDreqSent) send_dreq(ep, now);
    keep_dreq(ep);  // repeated until the peer's DREP, the EP itself is done
    finish_disconnect(ep, EventNum::kDisconnected);
    return kOk;
  }
  // Graceful (dat_ep_disconnect): "all outstanding and in-progress request
  // DTOs and RMR Binds must try to be completed successfully first, before
  // disconnect proceeds", the EP DISCONNECT_PENDING meanwhile.  The DREQ
  // leaves once the send queue is empty (or the queue pair failed: then the
  // requests completed in error and there is nothing left to wait for).
  ep->state = EpState::kDisconnectPending;
  watched.insert(ep);
  if (ep->cm == CmState::kEstablished && ep->qp != nullptr &&
      rc::qp::state(*ep->qp) == rc::QpState::kRts && rc::qp::send_queue_used(*ep->qp) > 0) {
    ep->cm = CmState::kDraining;
    ep->deadline = now + kDrainMaxNs;
    ep->next_retx = now + kDrainPollNs;
  } else {
    send_dreq(ep, now);
  }
  housekeep_by(ep->next_retx);
  return kOk;
}

wire::CmMessage Iface::dreq_of(const Ep& ep) const {
  wire::CmMessage m;
  m.type = wire::CmMsg::kDreq;
  m.tid = (uint64_t{cfg.ip} << 32) | ep.local_comm;
  m.local_comm_id = ep.local_comm;
  m.remote_comm_id = ep.remote_comm;
  m.qpn = ep.peer_qpn;
  return m;
}

void Iface::send_dreq(Ep* ep, uint64_t now) {
  // Ahead of the DREQ on the same path: the peer flushes what it still waits
  // to have acknowledged when the DREQ arrives, even messages we received.
  if (ep->qp != nullptr) rc::qp::ack_received(*ep->qp, now);
  ep->out_msg = dreq_of(*ep);
  send_cm(ep->peer_mac, ep->peer_ip, ep->out_msg);
  ep->cm = CmState::kDreqSent;
  ep->retx_interval = kCmRetxNs;
  ep->next_retx = now + ep->retx_interval;
  ep->retries = 0;
}

void Iface::keep_dreq(const Ep* ep) {
  PendingDreq d;
  d.comm = ep->local_comm;
  d.mac = ep->peer_mac;
  d.ip = ep->peer_ip;
  d.dreq = ep->out_msg;
  d.next_retx = ep->next_retx;
  d.retx_interval = ep->retx_interval;
  d.retries = ep->retries;
  d.owner = ep->ia;
  pending_dreqs[d.comm] = d;
  housekeep_by(d.next_retx);
}

}  // namespace dpdat::dat
