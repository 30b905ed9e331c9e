// Connection manager: the MADs received (REQ, REP, RTU, REJ, DREQ, DREP).

#include "cm.hpp"
#include "wire/packet.hpp"

namespace dpdat::dat {

using namespace cm;  // NOLINT(google-build-using-namespace): the CM's own constants

void Iface::on_gsi(const wire::PacketView& v, uint64_t) {
  CmIn in;
  if (wire::parse_cm(v.payload, in.m) != wire::CmError::kOk) {
    engine->counters().cm_malformed++;
    return;
  }
  in.ip = v.ip->src.value();
  in.mac = v.eth->src;
  in.udp_port = v.udp->src_port.value();
  cm_in.push_back(in);
  cm_pending.store(static_cast<uint32_t>(cm_in.size()), std::memory_order_relaxed);
}

void Iface::process_cm_in(uint64_t now) {
  // Handlers may send (the engine's TX) but never receive: cm_in does not
  // grow while it is walked.
  for (const CmIn& in : cm_in) on_cm(in, now);
  cm_in.clear();
}

void Iface::on_cm(const CmIn& in, uint64_t now) {
  const wire::CmMessage& m = in.m;
  const uint32_t src_ip = in.ip;
  const wire::MacAddr& src_mac = in.mac;
  switch (m.type) {
    case wire::CmMsg::kReq:
      on_req(m, src_mac, src_ip, in.udp_port, now);
      break;
    case wire::CmMsg::kRep:
      on_rep(m, now);
      break;
    case wire::CmMsg::kRtu:
      on_rtu(m);
      break;
    case wire::CmMsg::kRej:
      on_rej(m);
      break;
    case wire::CmMsg::kDreq:
      on_dreq(m, src_mac, src_ip);
      break;
    case wire::CmMsg::kDrep:
      on_drep(m);
      break;
    case wire::CmMsg::kMra:
      break;
  }
}

void Iface::on_req(const wire::CmMessage& m, const wire::MacAddr& mac, uint32_t ip, uint16_t,
                   uint64_t now) {
  const uint64_t key = (uint64_t{ip} << 32) | m.local_comm_id;
  if (auto it = passive.find(key); it != passive.end()) {
    PassiveRec& rec = it->second;
    if (rec.rejected) {
      send_cm(mac, ip, rec.rej);
    } else if (rec.ep != nullptr && rec.ep->cm == CmState::kRepSent) {
      send_cm(mac, ip, rec.ep->out_msg);
    }
    return;  // a pending CR: the consumer has not decided yet
  }
  auto lit = listeners.find(m.service_id);
  if (lit == listeners.end()) {
    send_rej(mac, ip, m, wire::CmRejReason::kInvalidServiceId, nullptr, 0);
    engine->counters().cm_req_refused++;
    return;
  }
  if (wire::cm_mtu_bytes(m.path_mtu) == 0) {
    send_rej(mac, ip, m, wire::CmRejReason::kInvalidMtu, nullptr, 0);
    engine->counters().cm_req_refused++;
    return;
  }
  Sp* sp = lit->second;
  if (sp->type == HandleType::kRsp && (sp->ep == nullptr || sp->ep->state != EpState::kReserved)) {
    send_rej(mac, ip, m, wire::CmRejReason::kNoQp, nullptr, 0);
    engine->counters().cm_req_refused++;
    return;
  }
  // Bounded CM state under a flood of REQs: past the pending-CR limits a
  // REQ is refused (no CR, no passive record, no event), the peer told "no
  // resources"; established connections are not touched.  The per-peer
  // limit comes first: an address that used up its own share is refused
  // before it can fill the listener's or the interface's budget.
  const auto peer_it = pending_by_peer.find(ip);
  const uint32_t from_peer = peer_it == pending_by_peer.end() ? 0 : peer_it->second;
  ReqLimit hit = ReqLimit::kCount;
  if (key_refusals_capped(ip, now)) {
    hit = ReqLimit::kKeyRefusals;
  } else if (from_peer >= limits.max_pending_crs_per_peer) {
    hit = ReqLimit::kPeer;
  } else if (sp->crs >= limits.max_pending_crs_per_sp) {
    hit = ReqLimit::kListener;
  } else if (pending_crs >= limits.max_pending_crs) {
    hit = ReqLimit::kInterface;
  }
  if (hit != ReqLimit::kCount) {
    reqs_refused++;
    engine->counters().reqs_refused[static_cast<size_t>(hit)]++;
    send_rej(mac, ip, m, wire::CmRejReason::kNoResources, nullptr, 0);
    return;
  }
  Ep* provider_ep = nullptr;
  if (sp->type == HandleType::kPsp && sp->flags == 1) {  // DAT_PSP_PROVIDER_FLAG
    provider_ep = new Ep(sp->ia);
    provider_ep->state = EpState::kTentativePending;
    provider_ep->provider_created = true;
    provider_ep->sp = sp;
    register_handle(provider_ep);
    sp->ia->children.insert(provider_ep);
  }
  auto* cr = new Cr(sp->ia);
  cr->sp = sp;
  cr->conn_qual = m.service_id;
  cr->req = m;
  cr->peer_mac = mac;
  cr->peer_ip = ip;
  cr->start_psn = random32() & 0xFFFFFFu;
  cr->pdata.assign(m.pdata.begin(), m.pdata.begin() + m.pdata_len);
  register_handle(cr);
  sp->ia->children.insert(cr);
  sp->crs++;
  pending_crs++;
  pending_by_peer[ip]++;
  if (sp->type == HandleType::kRsp) {
    cr->ep = sp->ep;
    sp->ep->state = EpState::kPassivePending;
  } else {
    cr->ep = provider_ep;
  }
  PassiveRec& rec = passive[key];
  rec = PassiveRec{};
  rec.cr = cr;
  rec.expires = now + kPassiveRecordNs;
  passive_expiry.emplace_back(rec.expires, key);
  Event ev;
  ev.num = EventNum::kConnRequest;
  ev.evd = sp->evd;
  ev.sp = sp;
  ev.conn_qual = m.service_id;
  ev.cr = cr;
  deliver(sp->evd, std::move(ev));
}

void Iface::on_rep(const wire::CmMessage& m, uint64_t now) {
  auto it = ep_by_comm.find(m.remote_comm_id);
  if (it == ep_by_comm.end()) return;
  Ep* ep = it->second;
  wire::CmMessage rtu;
  rtu.type = wire::CmMsg::kRtu;
  rtu.tid = m.tid;
  rtu.local_comm_id = ep->local_comm;
  rtu.remote_comm_id = m.local_comm_id;
  if (ep->cm == CmState::kReqSent && ep->cm_qpn != 0) {
    // A CM-only EP: the application connects its queue pair with what the
    // REP agreed (qp_cm_path), then ep_establish sends the RTU.
    ep->remote_comm = m.local_comm_id;
    ep->peer_qpn = m.qpn;
    ep->peer_psn = m.start_psn;
    ep->path_pmtu = agreed_pmtu(pmtu, m.path_mtu);
    ep->peer_resp_res = m.responder_resources;
    ep->peer_init_depth = m.initiator_depth;
    ep->cm = CmState::kRepRcvd;
    watched.erase(ep);  // the REQ is answered: no CM timer until ep_establish
    conn_event(ep, EventNum::kConnResponse, m.pdata.data(), m.pdata_len);
  } else if (ep->cm == CmState::kReqSent) {
    const uint32_t path_pmtu = agreed_pmtu(pmtu, m.path_mtu);
    if (!connect_qp(ep, ep->peer_mac, ep->peer_ip, m.qpn, path_pmtu, wire::Psn(ep->my_psn),
                    wire::Psn(m.start_psn))) {
      send_rej(ep->peer_mac, ep->peer_ip, m, wire::CmRejReason::kNoQp, nullptr, 0);
      finish_disconnect(ep, EventNum::kNonPeerRejected);
      return;
    }
    ep->remote_comm = m.local_comm_id;
    ep->peer_qpn = m.qpn;
    ep->peer_psn = m.start_psn;
    ep->path_pmtu = path_pmtu;
    ep->peer_resp_res = m.responder_resources;
    ep->peer_init_depth = m.initiator_depth;
    send_cm(ep->peer_mac, ep->peer_ip, rtu);
    ep->cm = CmState::kEstablished;
    watched.erase(ep);  // no CM timer while established (see cm_timers)
    ep->state = EpState::kConnected;
    ep->qp_attr_state = kQpAttrRts;
    ep->next_retx = 0;
    conn_event(ep, EventNum::kEstablished, m.pdata.data(), m.pdata_len);
    (void)now;
  } else if (ep->remote_comm == m.local_comm_id &&
             (ep->cm == CmState::kEstablished || ep->cm == CmState::kDraining ||
              ep->cm == CmState::kDreqSent)) {
    // Our RTU was lost: the peer still waits for it in every state in which
    // we consider the connection made, including a graceful disconnect's
    // drain (the peer takes our outstanding requests meanwhile).
    send_cm(ep->peer_mac, ep->peer_ip, rtu);
  }
}

void Iface::on_rtu(const wire::CmMessage& m) {
  auto it = ep_by_comm.find(m.remote_comm_id);
  if (it == ep_by_comm.end()) return;
  Ep* ep = it->second;
  if (ep->cm != CmState::kRepSent || ep->remote_comm != m.local_comm_id) return;
  ep->cm = CmState::kEstablished;
  watched.erase(ep);  // no CM timer while established (see cm_timers)
  ep->state = EpState::kConnected;
  conn_event(ep, EventNum::kEstablished, nullptr, 0);
}

void Iface::on_rej(const wire::CmMessage& m) {
  auto it = ep_by_comm.find(m.remote_comm_id);
  if (it == ep_by_comm.end()) return;
  Ep* ep = it->second;
  const auto reason = static_cast<uint32_t>(m.rej_reason);
  if (ep->cm == CmState::kReqSent) {
    finish_disconnect(ep,
                      m.rej_reason == wire::CmRejReason::kConsumerReject
                          ? EventNum::kPeerRejected
                          : EventNum::kNonPeerRejected,
                      m.pdata.data(), m.pdata_len, reason);
  } else if (ep->cm == CmState::kRepSent && ep->remote_comm == m.local_comm_id) {
    finish_disconnect(ep, EventNum::kAcceptCompletionError, m.pdata.data(), m.pdata_len, reason);
  }
}

void Iface::on_dreq(const wire::CmMessage& m, const wire::MacAddr& mac, uint32_t ip) {
  wire::CmMessage drep;
  drep.type = wire::CmMsg::kDrep;
  drep.tid = m.tid;
  drep.local_comm_id = m.remote_comm_id;
  drep.remote_comm_id = m.local_comm_id;
  send_cm(mac, ip, drep);
  auto it = ep_by_comm.find(m.remote_comm_id);
  // Only the connection's peer may end it: a DREQ naming no connection,
  // another one's comm IDs, or sent from another address is forged or stray.
  if (it == ep_by_comm.end() || it->second->remote_comm != m.local_comm_id ||
      it->second->peer_ip != ip) {
    const auto closed = closed_conns.find(m.remote_comm_id);
    const bool repeated = it == ep_by_comm.end() && closed != closed_conns.end() &&
                          closed->second.remote_comm == m.local_comm_id &&
                          closed->second.peer_ip == ip;
    ++(repeated ? engine->counters().cm_dreq_repeated : engine->counters().cm_forged_ignored);
    return;
  }
  Ep* ep = it->second;
  // The engine broke the connection before the peer's DREQ came (a fatal
  // NAK, retries spent; the peer's QP broke too and it says so): BROKEN,
  // as the housekeeping pass would have reported it, whichever came first.
  if (ep->cm == CmState::kEstablished && ep->qp != nullptr &&
      rc::qp::state(*ep->qp) == rc::QpState::kError) {
    count_key_refusals(ep, now_ns());
    finish_disconnect(ep, EventNum::kBroken);
    return;
  }
  if (ep->cm == CmState::kEstablished || ep->cm == CmState::kRepSent ||
      ep->cm == CmState::kRepRcvd || ep->cm == CmState::kDraining || ep->cm == CmState::kDreqSent)
    finish_disconnect(ep, EventNum::kDisconnected);
}

void Iface::on_drep(const wire::CmMessage& m) {
  pending_dreqs.erase(m.remote_comm_id);
  auto it = ep_by_comm.find(m.remote_comm_id);
  if (it == ep_by_comm.end()) return;
  Ep* ep = it->second;
  if (ep->cm == CmState::kDreqSent) finish_disconnect(ep, EventNum::kDisconnected);
}

}  // namespace dpdat::dat
