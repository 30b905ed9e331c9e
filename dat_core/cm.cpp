// Connection manager: IB CM messages (REQ/REP/RTU/REJ/DREQ/DREP) carried in
// RoCEv2 UD packets to QP 1 (see wire/cm.hpp for the frame format), driving
// the DAT endpoint state machine and its connection events.
//
// Path MTU: the REQ names the active side's; the passive side takes the
// smaller of that and its own and names it in the REP (see wire/cm.hpp).
//
// Active side:   connect -> ARP resolve -> REQ (retransmitted) -> REP ->
//                QP to RTS, RTU -> CONNECTED + ESTABLISHED
// Passive side:  REQ -> CR + CONNECTION_REQUEST event -> accept -> QP to
//                RTS, REP (retransmitted) -> RTU -> CONNECTED + ESTABLISHED
// Disconnect:    DREQ (retransmitted) -> DREP; either side -> DISCONNECTED
// Duplicates are recognised by communication IDs: a repeated REQ gets the
// same REP / REJ again, a repeated REP the same RTU.

#include <algorithm>
#include <cstring>

#include "core.hpp"

namespace dpdat::dat {
namespace {

constexpr uint64_t kArpRetryNs = 10'000'000;      // ARP request every 10 ms
constexpr uint64_t kArpGiveUpNs = 1'000'000'000;  // unreachable after 1 s
constexpr uint64_t kCmRetxNs = 50'000'000;        // first CM retransmission
constexpr uint64_t kCmRetxMaxNs = 1'000'000'000;  // back-off cap
constexpr uint32_t kCmMaxRetries = 15;            // IBA max CM retries
constexpr uint32_t kDreqRetries = 3;
constexpr uint64_t kPassiveRecordNs = 10'000'000'000;  // remember passive peers 10 s
constexpr uint64_t kHousekeepingNs = 1'000'000;
constexpr uint64_t kDrainPollNs = 20'000;  // graceful disconnect: re-check the send queue
// Longest a graceful disconnect waits for outstanding requests: a SEND to a
// peer that never posts a receive is RNR-retried without end, so the drain
// gives up, sends the DREQ and the rest is flushed.
constexpr uint64_t kDrainMaxNs = 2'000'000'000;

// The path MTU of a connection: the smaller of ours and the one the peer's
// REQ (passive side) or REP (active side) names; a REP that names none
// (0, a peer that does not negotiate) leaves ours.
uint32_t agreed_pmtu(uint32_t ours, uint8_t theirs_enum) {
  const uint32_t theirs = wire::cm_mtu_bytes(theirs_enum);
  return theirs == 0 ? ours : std::min(ours, theirs);
}

uint64_t guid_of(const wire::MacAddr& m) {  // EUI-64 from the MAC
  return (uint64_t{static_cast<uint8_t>(m[0] ^ 0x02)} << 56) | (uint64_t{m[1]} << 48) |
         (uint64_t{m[2]} << 40) | (uint64_t{0xFF} << 32) | (uint64_t{0xFE} << 24) |
         (uint64_t{m[3]} << 16) | (uint64_t{m[4]} << 8) | m[5];
}

void set_pdata(wire::CmMessage& m, const uint8_t* p, uint32_t len) {
  m.pdata_len = static_cast<uint8_t>(len);
  m.pdata.fill(0);
  if (len > 0) std::memcpy(m.pdata.data(), p, len);
}

}  // namespace

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
}

void Iface::conn_event(Ep* ep, EventNum n, const uint8_t* pdata, uint32_t len) {
  if (ep->conn_evd == nullptr) return;
  Event ev;
  ev.num = n;
  ev.evd = ep->conn_evd;
  ev.ep = ep;
  if (len > 0) {
    ev.pdata_buf = std::make_shared<const std::vector<uint8_t>>(pdata, pdata + len);
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
void Iface::finish_disconnect(Ep* ep, EventNum n, const uint8_t* pdata, uint32_t len) {
  if (ep->qp != nullptr && ep->qp->state() != rc::QpState::kError)
    ep->qp->set_error(rc::QpError::kDestroyed, now_ns());
  ep->state = EpState::kDisconnected;
  ep->cm = CmState::kDone;
  watched.erase(ep);
  conn_event(ep, n, pdata, len);
  // An SRQ EP takes no more receives from its SRQ (what verbs calls "last
  // WQE reached"): consumers wait for this before freeing such an EP.
  if (ep->srq != nullptr && !ep->freeing)
    async_event(ep->ia, EventNum::kEpBroken, ep, kEpTransferToErrorReason);
}

// ---------------------------------------------------------------- active side

Status Iface::connect(Ep* ep, uint32_t ip, uint64_t conn_qual, uint64_t timeout_us,
                      const uint8_t* pdata, uint32_t pdata_len) {
  if (pdata_len > wire::kCmReqPdata) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  if (ep->qp == nullptr) {
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
  m.qpn = ep->qp->qpn();
  m.start_psn = ep->my_psn;
  m.responder_resources = static_cast<uint8_t>(std::min(ep->attr.max_rdma_read_in, 255u));
  m.initiator_depth = static_cast<uint8_t>(std::min(ep->attr.max_rdma_read_out, 255u));
  m.path_mtu = wire::cm_mtu_enum(pmtu);
  m.src_ip = cfg.ip;
  m.dst_ip = ip;
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

void Iface::on_rep(const wire::CmMessage& m, uint64_t now) {
  auto it = ep_by_comm.find(m.remote_comm_id);
  if (it == ep_by_comm.end()) return;
  Ep* ep = it->second;
  wire::CmMessage rtu;
  rtu.type = wire::CmMsg::kRtu;
  rtu.tid = m.tid;
  rtu.local_comm_id = ep->local_comm;
  rtu.remote_comm_id = m.local_comm_id;
  if (ep->cm == CmState::kReqSent) {
    rc::PathInfo path;
    path.local_mac = link->mac();
    path.peer_mac = ep->peer_mac;
    path.local_ip = cfg.ip;
    path.peer_ip = ep->peer_ip;
    path.udp_src_port = static_cast<uint16_t>(0xC000u | (ep->qp->qpn() & 0x3FFFu));
    path.peer_qpn = m.qpn;
    if (!ep->qp->set_pmtu(agreed_pmtu(pmtu, m.path_mtu)) ||
        !ep->qp->connect(path, wire::Psn(ep->my_psn), wire::Psn(m.start_psn))) {
      send_rej(ep->peer_mac, ep->peer_ip, m, wire::CmRejReason::kNoQp, nullptr, 0);
      finish_disconnect(ep, EventNum::kNonPeerRejected);
      return;
    }
    ep->remote_comm = m.local_comm_id;
    ep->peer_qpn = m.qpn;
    send_cm(ep->peer_mac, ep->peer_ip, rtu);
    ep->cm = CmState::kEstablished;
    ep->state = EpState::kConnected;
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

void Iface::on_rej(const wire::CmMessage& m) {
  auto it = ep_by_comm.find(m.remote_comm_id);
  if (it == ep_by_comm.end()) return;
  Ep* ep = it->second;
  if (ep->cm == CmState::kReqSent) {
    finish_disconnect(ep,
                      m.rej_reason == wire::CmRejReason::kConsumerReject
                          ? EventNum::kPeerRejected
                          : EventNum::kNonPeerRejected,
                      m.pdata.data(), m.pdata_len);
  } else if (ep->cm == CmState::kRepSent && ep->remote_comm == m.local_comm_id) {
    finish_disconnect(ep, EventNum::kAcceptCompletionError);
  }
}

// --------------------------------------------------------------- passive side

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
    return;
  }
  if (wire::cm_mtu_bytes(m.path_mtu) == 0) {
    send_rej(mac, ip, m, wire::CmRejReason::kInvalidMtu, nullptr, 0);
    return;
  }
  Sp* sp = lit->second;
  if (sp->type == HandleType::kRsp && (sp->ep == nullptr || sp->ep->state != EpState::kReserved)) {
    send_rej(mac, ip, m, wire::CmRejReason::kNoQp, nullptr, 0);
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
  cr->pdata.assign(m.pdata.begin(), m.pdata.begin() + m.pdata_len);
  register_handle(cr);
  sp->ia->children.insert(cr);
  sp->crs++;
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
  Event ev;
  ev.num = EventNum::kConnRequest;
  ev.evd = sp->evd;
  ev.sp = sp;
  ev.conn_qual = m.service_id;
  ev.cr = cr;
  deliver(sp->evd, std::move(ev));
}

Status Iface::accept(Cr* cr, Ep* ep, const uint8_t* pdata, uint32_t pdata_len) {
  if (pdata_len > wire::kCmRepPdata) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  if (ep == nullptr) ep = cr->ep;
  if (ep == nullptr) return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (ep->qp == nullptr) {
    if (ep->pz == nullptr) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_NOTREADY);
    Status st = make_qp(ep);
    if (!st.ok()) return st;
  }
  const uint64_t now = now_ns();
  rc::PathInfo path;
  path.local_mac = link->mac();
  path.peer_mac = cr->peer_mac;
  path.local_ip = cfg.ip;
  path.peer_ip = cr->peer_ip;
  path.udp_src_port = static_cast<uint16_t>(0xC000u | (ep->qp->qpn() & 0x3FFFu));
  path.peer_qpn = cr->req.qpn;
  ep->my_psn = random32() & 0xFFFFFFu;
  const uint32_t path_pmtu = agreed_pmtu(pmtu, cr->req.path_mtu);
  if (!ep->qp->set_pmtu(path_pmtu) ||
      !ep->qp->connect(path, wire::Psn(ep->my_psn), wire::Psn(cr->req.start_psn)))
    return fail(Type::INVALID_STATE, Sub::INVALID_STATE_EP_NOTREADY);
  ep->peer_ip = cr->peer_ip;
  ep->peer_mac = cr->peer_mac;
  ep->peer_qpn = cr->req.qpn;
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
  m.qpn = ep->qp->qpn();
  m.start_psn = ep->my_psn;
  m.responder_resources = static_cast<uint8_t>(std::min(ep->attr.max_rdma_read_in, 255u));
  m.initiator_depth = static_cast<uint8_t>(std::min(ep->attr.max_rdma_read_out, 255u));
  m.path_mtu = wire::cm_mtu_enum(path_pmtu);
  set_pdata(m, pdata, pdata_len);
  send_cm(ep->peer_mac, ep->peer_ip, m);
  ep->state = EpState::kPassivePending;
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

void Iface::on_rtu(const wire::CmMessage& m) {
  auto it = ep_by_comm.find(m.remote_comm_id);
  if (it == ep_by_comm.end()) return;
  Ep* ep = it->second;
  if (ep->cm != CmState::kRepSent || ep->remote_comm != m.local_comm_id) return;
  ep->cm = CmState::kEstablished;
  ep->state = EpState::kConnected;
  conn_event(ep, EventNum::kEstablished, nullptr, 0);
}

// ----------------------------------------------------------------- disconnect

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
      // and the peer's accept times out (ACCEPT_COMPLETION_ERROR there).
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
      ep->qp->state() == rc::QpState::kRts && ep->qp->send_queue_used() > 0) {
    ep->cm = CmState::kDraining;
    ep->deadline = now + kDrainMaxNs;
    ep->next_retx = now + kDrainPollNs;
  } else {
    send_dreq(ep, now);
  }
  housekeep_by(ep->next_retx);
  return kOk;
}

void Iface::send_dreq(Ep* ep, uint64_t now) {
  // Ahead of the DREQ on the same path: the peer flushes what it still waits
  // to have acknowledged when the DREQ arrives, even messages we received.
  if (ep->qp != nullptr) ep->qp->ack_received(now);
  wire::CmMessage& m = ep->out_msg;
  m = wire::CmMessage{};
  m.type = wire::CmMsg::kDreq;
  m.tid = (uint64_t{cfg.ip} << 32) | ep->local_comm;
  m.local_comm_id = ep->local_comm;
  m.remote_comm_id = ep->remote_comm;
  m.qpn = ep->peer_qpn;
  send_cm(ep->peer_mac, ep->peer_ip, m);
  ep->cm = CmState::kDreqSent;
  ep->retx_interval = kCmRetxNs;
  ep->next_retx = now + ep->retx_interval;
  ep->retries = 0;
}

void Iface::on_dreq(const wire::CmMessage& m, const wire::MacAddr& mac, uint32_t ip) {
  wire::CmMessage drep;
  drep.type = wire::CmMsg::kDrep;
  drep.tid = m.tid;
  drep.local_comm_id = m.remote_comm_id;
  drep.remote_comm_id = m.local_comm_id;
  send_cm(mac, ip, drep);
  auto it = ep_by_comm.find(m.remote_comm_id);
  if (it == ep_by_comm.end()) return;
  Ep* ep = it->second;
  if (ep->remote_comm != m.local_comm_id) return;
  if (ep->cm == CmState::kEstablished || ep->cm == CmState::kRepSent ||
      ep->cm == CmState::kDraining || ep->cm == CmState::kDreqSent)
    finish_disconnect(ep, EventNum::kDisconnected);
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
  pending_dreqs.push_back(d);
  housekeep_by(d.next_retx);
}

bool Iface::dreq_pending(uint32_t comm) const {
  return std::any_of(pending_dreqs.begin(), pending_dreqs.end(),
                     [comm](const PendingDreq& d) { return d.comm == comm; });
}

// The DREQs of abrupt disconnects, on the schedule of a graceful one's:
// repeated while unanswered, given up after kDreqRetries repetitions (the
// peer is gone; it finds out by its own retries, as for a lost DREQ).
void Iface::pending_dreq_timers(uint64_t now, uint64_t* next) {
  for (auto it = pending_dreqs.begin(); it != pending_dreqs.end();) {
    if (now >= it->next_retx) {
      if (++it->retries > kDreqRetries) {
        it = pending_dreqs.erase(it);
        continue;
      }
      send_cm(it->mac, it->ip, it->dreq);
      it->next_retx = now + it->retx_interval;
      it->retx_interval = std::min(it->retx_interval * 2, kCmRetxMaxNs);
    }
    *next = std::min(*next, it->next_retx);
    ++it;
  }
}

void Iface::on_drep(const wire::CmMessage& m) {
  std::erase_if(pending_dreqs, [&m](const PendingDreq& d) { return d.comm == m.remote_comm_id; });
  auto it = ep_by_comm.find(m.remote_comm_id);
  if (it == ep_by_comm.end()) return;
  Ep* ep = it->second;
  if (ep->cm == CmState::kDreqSent) finish_disconnect(ep, EventNum::kDisconnected);
}

// ------------------------------------------------------------------- dispatch

void Iface::on_gsi(const wire::PacketView& v, uint64_t) {
  CmIn in;
  if (wire::parse_cm(v.payload, in.m) != wire::CmError::kOk) return;
  in.ip = v.ip->src.value();
  in.mac = v.eth->src;
  in.udp_port = v.udp->src_port.value();
  cm_in.push_back(in);
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

void Iface::cm_timers(uint64_t now) {
  uint64_t next = now + kHousekeepingNs;
  std::vector<Ep*> eps(watched.begin(), watched.end());
  for (Ep* ep : eps) {
    switch (ep->cm) {
      case CmState::kResolving:
        if (now < ep->next_retx) break;
        if (link->resolve(ep->peer_ip, &ep->peer_mac)) {
          ep->cm = CmState::kReqSent;
          ep->retx_interval = kCmRetxNs;
          ep->retries = 0;
          send_out(ep, now);
        } else if ((ep->deadline != 0 && now >= ep->deadline) ||
                   ep->retries * kArpRetryNs >= kArpGiveUpNs) {
          finish_disconnect(ep, EventNum::kUnreachable);
          continue;
        } else {
          ep->retries++;
          ep->next_retx = now + kArpRetryNs;
        }
        break;
      case CmState::kReqSent:
        if (ep->deadline != 0 && now >= ep->deadline) {
          finish_disconnect(ep, EventNum::kTimedOut);
          continue;
        }
        if (now < ep->next_retx) break;
        if (++ep->retries > kCmMaxRetries) {
          finish_disconnect(ep, EventNum::kTimedOut);
          continue;
        }
        send_out(ep, now);
        break;
      case CmState::kRepSent:
        if (now < ep->next_retx) break;
        if (++ep->retries > kCmMaxRetries) {
          finish_disconnect(ep, EventNum::kAcceptCompletionError);
          continue;
        }
        send_out(ep, now);
        break;
      case CmState::kDraining:
        if (ep->qp == nullptr || ep->qp->state() != rc::QpState::kRts ||
            ep->qp->send_queue_used() == 0 || now >= ep->deadline) {
          send_dreq(ep, now);
        } else {
          ep->next_retx = now + kDrainPollNs;
        }
        break;
      case CmState::kDreqSent:
        if (now < ep->next_retx) break;
        if (++ep->retries > kDreqRetries) {
          finish_disconnect(ep, EventNum::kDisconnected);
          continue;
        }
        send_out(ep, now);
        break;
      case CmState::kEstablished:
        if (ep->qp != nullptr && ep->qp->state() == rc::QpState::kError) {
          // The RC engine gave up (retry budget, fatal NAK): the connection is
          // broken.  Tell the peer once, best effort.
          wire::CmMessage d;
          d.type = wire::CmMsg::kDreq;
          d.local_comm_id = ep->local_comm;
          d.remote_comm_id = ep->remote_comm;
          d.qpn = ep->peer_qpn;
          send_cm(ep->peer_mac, ep->peer_ip, d);
          finish_disconnect(ep, EventNum::kBroken);
          continue;
        }
        break;
      case CmState::kIdle:
      case CmState::kDone:
        watched.erase(ep);
        continue;
    }
    if (ep->cm != CmState::kEstablished) next = std::min(next, ep->next_retx);
  }
  pending_dreq_timers(now, &next);
  for (auto it = passive.begin(); it != passive.end();) {
    if (it->second.cr == nullptr && now >= it->second.expires)
      it = passive.erase(it);
    else
      ++it;
  }
  next_housekeeping.store(next);
}

void Iface::drop_ep(Ep* ep) {
  if (ep->local_comm != 0) {
    auto it = ep_by_comm.find(ep->local_comm);
    if (it != ep_by_comm.end() && it->second == ep) ep_by_comm.erase(it);
  }
  watched.erase(ep);
  for (auto& [key, rec] : passive)
    if (rec.ep == ep) rec.ep = nullptr;
}

void Iface::drop_cr(Cr* cr) {
  for (auto& [key, rec] : passive)
    if (rec.cr == cr) rec.cr = nullptr;
  if (cr->sp != nullptr && cr->sp->crs > 0) cr->sp->crs--;
  if (cr->ep != nullptr && cr->ep->provider_created &&
      cr->ep->state == EpState::kTentativePending) {
    // A provider-created EP the consumer never accepted goes with its CR.
    Ep* ep = cr->ep;
    unregister_handle(ep);
    ep->ia->children.erase(ep);
    delete ep;
  }
  unregister_handle(cr);
  cr->ia->children.erase(cr);
  delete cr;
}

}  // namespace dpdat::dat
