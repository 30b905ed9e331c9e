// Connection manager: timers (address resolution, retransmission of REQ,
// REP and DREQ, graceful-disconnect drain, broken connections) and the
// forgetting of EPs and CRs.

#include "cm.hpp"
#include "ops.hpp"  // qp_attr_errored, qp_attr_pass

namespace dpdat::dat {

using namespace cm;  // NOLINT(google-build-using-namespace): the CM's own constants

void Iface::cm_timers(uint64_t now) {
  uint64_t next = now + kHousekeepingNs;
  // Established connections are not walked: the engine names the queue
  // pairs that went to error, and only their EPs are looked at.
  for (auto& sh : shards)
    sh->engine->take_errors([this, now](uint32_t qpn) {
      auto it = ep_by_qpn.find(qpn);
      if (it == ep_by_qpn.end()) return;
      Ep* ep = it->second;
      count_key_refusals(ep, now);
      if (ep->qp == nullptr || rc::qp::state(*ep->qp) != rc::QpState::kError) return;
      if (ep->conn_evd == nullptr && ep->qp_attr_state != 0) {
        qp_attr_errored(ep);  // connected by attributes: no CM, async events only
        return;
      }
      if (ep->cm != CmState::kEstablished) return;
      // A verbs QP connected through the CM (qp_cm_attach): verbs' QP_FATAL.
      if (ep->cm_attached && rc::qp::error(*ep->qp) != rc::QpError::kDestroyed)
        async_event(ep->ia, EventNum::kEpBroken, ep, kEpTransferToErrorReason);
      // The RC engine gave up (retry budget, fatal NAK): the connection is
      // broken.  Tell the peer once, best effort.
      send_cm(ep->peer_mac, ep->peer_ip, dreq_of(*ep));
      finish_disconnect(ep, EventNum::kBroken);
    });
  if (!qp_attr_watch.empty()) qp_attr_pass(this);
  if (!link_watchers.empty() && now >= next_link_poll) {
    next_link_poll = now + kLinkPollNs;
    const int8_t up = link->link_up() ? 1 : 0;
    if (link_state >= 0 && up != link_state)
      for (Ia* ia : link_watchers)
        async_event(ia, EventNum::kProviderInternal, ia, up != 0 ? kLinkUpReason : kLinkDownReason);
    link_state = up;
  }
  for (auto it = key_refusals_by_peer.begin(); it != key_refusals_by_peer.end();)
    it = now - it->second.since >= kKeyRefusalWindowNs ? key_refusals_by_peer.erase(it) : ++it;
  // A pass may end EPs (and take them off `watched`): it walks a copy, in a
  // vector kept for the purpose (no allocation once it has grown).
  std::vector<Ep*>& eps = watched_pass;
  eps.assign(watched.begin(), watched.end());
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
        // A connect with a timeout keeps asking until that timeout: a peer
        // whose host gives it no CPU for seconds answers late, not never.
        // Without one, the REQ gives up after the IBA's retries.
        if (++ep->retries > kCmMaxRetries && ep->deadline == 0) {
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
        if (ep->qp == nullptr || rc::qp::state(*ep->qp) != rc::QpState::kRts ||
            rc::qp::send_queue_used(*ep->qp) == 0 || now >= ep->deadline) {
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
      case CmState::kEstablished:  // watched by take_errors() above
      case CmState::kRepRcvd:      // waits for ep_establish
      case CmState::kIdle:
      case CmState::kDone:
        watched.erase(ep);
        continue;
    }
    if (ep->cm != CmState::kEstablished) next = std::min(next, ep->next_retx);
  }
  pending_dreq_timers(now, &next);
  // Records of answered requests expire kPassiveRecordNs after their last
  // change: only the records whose time came are looked at (passive_expiry
  // is in time order; a record changed since has a later entry too, one
  // still pending is looked at again later).
  while (!passive_expiry.empty() && passive_expiry.front().first <= now) {
    const uint64_t key = passive_expiry.front().second;
    passive_expiry.pop_front();
    auto it = passive.find(key);
    if (it == passive.end()) continue;
    if (it->second.cr != nullptr) {
      passive_expiry.emplace_back(now + kPassiveRecordNs, key);
    } else if (now >= it->second.expires) {
      passive.erase(it);
    }
  }
  while (!closed_expiry.empty() && closed_expiry.front().first <= now) {
    const uint32_t comm = closed_expiry.front().second;
    closed_expiry.pop_front();
    // A newer record of the same ID (reused since) has a later entry.
    if (auto it = closed_conns.find(comm); it != closed_conns.end() && it->second.expires <= now)
      closed_conns.erase(it);
  }
  // Queue pairs that failed while this pass ran (DREQs, flushes): at once.
  for (auto& sh : shards)
    if (sh->engine->has_errors()) next = now;
  next_housekeeping.store(next);
}

// The DREQs of abrupt disconnects, on the schedule of a graceful one's:
// repeated while unanswered, given up after kDreqRetries repetitions (the
// peer is gone; it finds out by its own retries, as for a lost DREQ).
void Iface::pending_dreq_timers(uint64_t now, uint64_t* next) {
  for (auto it = pending_dreqs.begin(); it != pending_dreqs.end();) {
    PendingDreq& d = it->second;
    if (now >= d.next_retx) {
      if (++d.retries > kDreqRetries) {
        it = pending_dreqs.erase(it);
        continue;
      }
      send_cm(d.mac, d.ip, d.dreq);
      d.next_retx = now + d.retx_interval;
      d.retx_interval = std::min(d.retx_interval * 2, kCmRetxMaxNs);
    }
    *next = std::min(*next, d.next_retx);
    ++it;
  }
}

void Iface::count_key_refusals(Ep* ep, uint64_t now) {
  if (ep->qp == nullptr) return;
  const uint64_t n = rc::qp::counters(*ep->qp).rkey_refused;
  if (n <= ep->key_refusals_counted) return;
  note_key_refusals(ep->peer_ip, n - ep->key_refusals_counted, now);
  ep->key_refusals_counted = n;
}

void Iface::note_key_refusals(uint32_t ip, uint64_t n, uint64_t now) {
  KeyRefusals& k = key_refusals_by_peer[ip];
  if (k.count == 0 || now - k.since >= kKeyRefusalWindowNs) k = KeyRefusals{now, 0};
  k.count = static_cast<uint32_t>(std::min<uint64_t>(k.count + n, UINT32_MAX));
}

bool Iface::key_refusals_capped(uint32_t ip, uint64_t now) const {
  const auto it = key_refusals_by_peer.find(ip);
  return it != key_refusals_by_peer.end() && now - it->second.since < kKeyRefusalWindowNs &&
         it->second.count >= limits.max_key_refusals_per_peer;
}

bool Iface::dreq_pending(uint32_t comm) const { return pending_dreqs.count(comm) != 0; }

void Iface::drop_ep(Ep* ep) {
  if (ep->local_comm != 0) {
    auto it = ep_by_comm.find(ep->local_comm);
    if (it != ep_by_comm.end() && it->second == ep) {
      ep_by_comm.erase(it);
      if (ep->remote_comm != 0) {
        const uint64_t expires = now_ns() + kClosedRecordNs;
        closed_conns[ep->local_comm] = ClosedConn{ep->remote_comm, ep->peer_ip, expires};
        closed_expiry.emplace_back(expires, ep->local_comm);
      }
    }
  }
  watched.erase(ep);
  qp_attr_watch.erase(ep);
  // Only an accepted EP is in a passive record, under its peer's REQ
  // (peer address, the peer's communication ID = our remote_comm).
  if (auto it = passive.find((uint64_t{ep->peer_ip} << 32) | ep->remote_comm);
      it != passive.end() && it->second.ep == ep)
    it->second.ep = nullptr;
}

void Iface::drop_cr(Cr* cr) {
  if (auto it = passive.find((uint64_t{cr->peer_ip} << 32) | cr->req.local_comm_id);
      it != passive.end() && it->second.cr == cr)
    it->second.cr = nullptr;
  if (cr->sp != nullptr && cr->sp->crs > 0) cr->sp->crs--;
  if (pending_crs > 0) pending_crs--;
  if (auto it = pending_by_peer.find(cr->peer_ip); it != pending_by_peer.end() && --it->second == 0)
    pending_by_peer.erase(it);
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
