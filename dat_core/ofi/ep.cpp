// Passive and active endpoints: creation, binding, enabling (the DAT EP is
// created then), and the connection calls (PSP, connect, accept, reject,
// shutdown).

#include <algorithm>
#include <cstring>

#include "rdm.hpp"

namespace dpdat::ofi {

// Data transfer tables (data.cpp).
extern fi_ops_msg g_msg_ops;
extern fi_ops_rma g_rma_ops;
extern fi_ops_atomic g_atomic_ops;

namespace {

uint32_t iface_ip(const Fabric* f) { return f->cfg.ip; }

// ------------------------------------------------------------ common

// FI_OPT_CM_DATA_SIZE (both kinds of endpoint), FI_OPT_MIN_MULTI_RECV
// (active endpoints).
int ep_getopt(fid_t f, int level, int optname, void* optval, size_t* optlen) {
  if (level != FI_OPT_ENDPOINT) return -FI_ENOPROTOOPT;
  size_t v = 0;
  if (optname == FI_OPT_CM_DATA_SIZE) {
    v = kCmDataSize;
  } else if (optname == FI_OPT_MIN_MULTI_RECV && f->fclass == FI_CLASS_EP) {
    v = reinterpret_cast<Ep*>(f)->min_multi_recv;
  } else {
    return -FI_ENOPROTOOPT;
  }
  if (optval == nullptr || optlen == nullptr || *optlen < sizeof(size_t)) return -FI_ETOOSMALL;
  std::memcpy(optval, &v, sizeof(v));
  *optlen = sizeof(v);
  return 0;
}
int ep_setopt(fid_t f, int level, int optname, const void* optval, size_t optlen) {
  if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV || f->fclass != FI_CLASS_EP)
    return -FI_ENOPROTOOPT;
  if (optval == nullptr || optlen != sizeof(size_t)) return -FI_EINVAL;
  auto* ep = reinterpret_cast<Ep*>(f);
  size_t v = 0;
  std::memcpy(&v, optval, sizeof(v));
  dat::SpinLockGuard lk(ep->multi_mu);
  ep->min_multi_recv = v;  // for the buffers posted from now on
  return 0;
}
ssize_t ep_cancel(fid_t, void*) { return -FI_ENOSYS; }
int ep_tx_ctx(fid_ep*, int, fi_tx_attr*, fid_ep**, void*) { return -FI_ENOSYS; }
int ep_rx_ctx(fid_ep*, int, fi_rx_attr*, fid_ep**, void*) { return -FI_ENOSYS; }
ssize_t ep_size_left(fid_ep*) { return -FI_ENOSYS; }
int cm_listen_none(fid_pep*) { return -FI_ENOSYS; }
int cm_accept_none(fid_ep*, const void*, size_t) { return -FI_ENOSYS; }
int cm_reject_none(fid_pep*, fid_t, const void*, size_t) { return -FI_ENOSYS; }
int cm_connect_none(fid_ep*, const void*, const void*, size_t) { return -FI_ENOSYS; }
int cm_getpeer_none(fid_ep*, void*, size_t*) { return -FI_ENOSYS; }
int cm_shutdown_none(fid_ep*, uint64_t) { return -FI_ENOSYS; }
int cm_join_none(fid_ep*, const void*, uint64_t, fid_mc**, void*) { return -FI_ENOSYS; }

// ------------------------------------------------------------ passive EP

int pep_close(fid* f) {
  auto* pep = reinterpret_cast<Pep*>(f);
  if (pep->sp != nullptr) {
    if (dat::Status st = dat::sp_free(pep->sp); !st.ok()) return to_fi(st);
  }
  if (pep->eq != nullptr) pep->eq->refs--;
  fi_freeinfo(pep->info);
  {
    std::lock_guard lk(pep->fab->mu);
    pep->fab->refs--;
  }
  delete pep;
  return 0;
}

int pep_bind(fid* f, fid* bf, uint64_t flags) {
  auto* pep = reinterpret_cast<Pep*>(f);
  Eq* eq = object_of<Eq>(bf, FI_CLASS_EQ);
  if (eq == nullptr || flags != 0) return -FI_EINVAL;
  if (pep->sp != nullptr) return -FI_EOPBADSTATE;
  dat::Ia* ia = nullptr;
  if (int r = fabric_ia(pep->fab, pep->info, &ia); r != 0) return r;
  if (int r = eq_attach(eq, ia); r != 0) return r;
  if (pep->eq != nullptr) pep->eq->refs--;
  pep->eq = eq;
  eq->refs++;
  return 0;
}

int pep_getname(fid_t f, void* addr, size_t* addrlen) {
  auto* pep = reinterpret_cast<Pep*>(f);
  return put_name(make_sin(iface_ip(pep->fab), pep->port), addr, addrlen);
}

int pep_setname(fid_t f, void* addr, size_t addrlen) {
  auto* pep = reinterpret_cast<Pep*>(f);
  uint32_t ip = 0;
  uint16_t port = 0;
  if (!parse_sin(addr, addrlen, &ip, &port)) return -FI_EINVAL;
  if (ip != 0 && ip != iface_ip(pep->fab)) return -FI_EADDRNOTAVAIL;
  if (pep->sp != nullptr) return -FI_EOPBADSTATE;
  pep->port = port;
  return 0;
}

int pep_listen(fid_pep* p) {
  auto* pep = reinterpret_cast<Pep*>(p);
  if (pep->eq == nullptr) return -FI_ENOEQ;
  if (pep->sp != nullptr) return 0;
  dat::Ia* ia = pep->eq->evd->ia;
  dat::Status st;
  if (pep->port != 0) {
    st = dat::psp_create(ia, pep->port, pep->eq->evd, 0, &pep->sp);
  } else {
    // An ephemeral port: the first free connection qualifier of the range.
    st = dat::fail(dat::Type::CONN_QUAL_IN_USE);
    for (uint32_t port = 49152; port <= 65535 && st.type == dat::Type::CONN_QUAL_IN_USE; ++port) {
      st = dat::psp_create(ia, port, pep->eq->evd, 0, &pep->sp);
      if (st.ok()) pep->port = static_cast<uint16_t>(port);
    }
  }
  if (!st.ok()) return to_fi(st);
  dat::Lock lk(ia->iface);
  pep->sp->context = reinterpret_cast<uintptr_t>(pep);
  pep->sp->context_set = true;
  return 0;
}

int pep_reject(fid_pep*, fid_t handle, const void* param, size_t len) {
  auto* req = object_of<ConnReq>(handle, FI_CLASS_CONNREQ);
  if (req == nullptr) return -FI_EINVAL;
  if (len > kCmDataSize || (len > 0 && param == nullptr)) return -FI_EINVAL;
  const int r = to_fi(
      dat::cr_reject(req->cr, static_cast<const uint8_t*>(param), static_cast<uint32_t>(len)));
  req->fid_.fclass = FI_CLASS_UNSPEC;  // answered
  return r;
}

fi_ops g_pep_fi_ops = {sizeof(fi_ops), pep_close, pep_bind,  no_control,
                       no_ops_open,    no_tostr,  no_ops_set};
fi_ops_ep g_pep_ep_ops = {sizeof(fi_ops_ep), ep_cancel, ep_getopt,    ep_setopt,
                          ep_tx_ctx,         ep_rx_ctx, ep_size_left, ep_size_left};
fi_ops_cm g_pep_cm_ops = {sizeof(fi_ops_cm), pep_setname, pep_getname,    cm_getpeer_none,
                          cm_connect_none,   pep_listen,  cm_accept_none, pep_reject,
                          cm_shutdown_none,  cm_join_none};

// ------------------------------------------------------------ active EP

// Creates the DAT EP from the bound CQs and EQ and the inject slots.
int enable(Ep* ep) {
  if (ep->dep != nullptr) return 0;
  if (ep->eq == nullptr) return -FI_ENOEQ;
  // A side with counters but no CQ gets an internal one for them.
  const bool tx_counted =
      ep->cntr_send != nullptr || ep->cntr_read != nullptr || ep->cntr_write != nullptr;
  if (ep->txcq == nullptr && tx_counted) {
    if (int r = cq_internal(ep->dom, &ep->txcq); r != 0) return r;
    ep->txcq->refs++;
  }
  if (ep->rxcq == nullptr && ep->cntr_recv != nullptr) {
    if (int r = cq_internal(ep->dom, &ep->rxcq); r != 0) return r;
    ep->rxcq->refs++;
  }
  if (ep->txcq == nullptr || ep->rxcq == nullptr) return -FI_ENOCQ;
  if (ep->srx == nullptr && ep->info->ep_attr != nullptr &&
      ep->info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT) {
    FI_WARN(&g_prov, FI_LOG_EP_CTRL, "a shared receive context is wanted but none is bound\n");
    return -FI_EINVAL;
  }
  if (ep->cntr_recv != nullptr) ep->rxcq->counting = true;
  dat::Ia* ia = ep->dom->pz->ia;
  dat::EpAttr a;
  a.max_request_dtos = static_cast<uint32_t>(ep->info->tx_attr->size);
  a.max_recv_dtos = static_cast<uint32_t>(ep->info->rx_attr->size);
  ep->bounce.assign(kInjectSlots * kInjectSize, 0);
  ep->slots.assign(kInjectSlots, Slot{});
  dat::LmrSpec s;
  s.host = ep->bounce.data();
  s.va = reinterpret_cast<uintptr_t>(ep->bounce.data());
  s.length = ep->bounce.size();
  dat::Status st = dat::lmr_create(ia, ep->dom->pz, s, rc::priv::kLocalRead | rc::priv::kLocalWrite,
                                   &ep->bounce_lmr);
  if (!st.ok()) return to_fi(st);
  st = dat::ep_create(ia, ep->dom->pz, ep->rxcq->evd, ep->txcq->evd, ep->eq->evd, &a, &ep->dep,
                      ep->srx != nullptr ? ep->srx->srq : nullptr);
  if (!st.ok()) {
    if (!dat::lmr_free(ep->bounce_lmr).ok()) FI_WARN(&g_prov, FI_LOG_EP_CTRL, "lmr leak\n");
    ep->bounce_lmr = nullptr;
    return to_fi(st);
  }
  {
    dat::Lock lk(ia->iface);
    ep->dep->context = reinterpret_cast<uintptr_t>(ep);
    ep->dep->context_set = true;
  }
  // The responder counts remote WRITEs and READs itself.
  if (ep->cntr_rem_write != nullptr || ep->cntr_rem_read != nullptr) {
    st = dat::ep_set_rma_counters(
        ep->dep, ep->cntr_rem_write != nullptr ? &ep->cntr_rem_write->value : nullptr,
        ep->cntr_rem_read != nullptr ? &ep->cntr_rem_read->value : nullptr);
    if (!st.ok()) return to_fi(st);
  }
  // FD counters hear of the completions on the EP's CQs.
  if (int r = cntr_listen_ep(ep); r != 0) return r;
  ep->listened = true;
  return 0;
}

int ep_close(fid* f) {
  auto* ep = reinterpret_cast<Ep*>(f);
  if (ep->dep != nullptr) {
    // What completed before the close (a send the peer acknowledged just
    // before its disconnect, a receive flushed by that disconnect) is
    // reported: ep_free drops the EP's completions, so they go into the CQs'
    // stashes first, resolved while the EP still exists.  ofi_rxm closes a
    // connection's endpoint when the peer disconnects and then reads the CQ
    // for what that endpoint completed; a send's completion lost here left
    // its consumer waiting for ever.  What the close itself flushes is
    // discarded (fi_endpoint(3)).
    (void)dat::ep_settle(ep->dep);
    for (Cq* cq : {ep->txcq, ep->rxcq})
      if (cq != nullptr) cq_progress(cq);
    dat::EpStatus es;
    if (dat::ep_get_status(ep->dep, &es).ok() && es.state != dat::EpState::kUnconnected &&
        es.state != dat::EpState::kDisconnected)
      if (!dat::ep_disconnect(ep->dep, true).ok())
        FI_DBG(&g_prov, FI_LOG_EP_CTRL, "disconnect at close refused\n");
    if (ep->eq != nullptr) eq_drain(ep->eq);
    if (dat::Status st = dat::ep_free(ep->dep); !st.ok()) return to_fi(st);
    ep->dep = nullptr;
  }
  if (ep->bounce_lmr != nullptr) {
    if (dat::Status st = dat::lmr_free(ep->bounce_lmr); !st.ok()) return to_fi(st);
  }
  if (ep->listened) cntr_unlisten_ep(ep);
  for (Cntr* c : {ep->cntr_send, ep->cntr_recv, ep->cntr_read, ep->cntr_write, ep->cntr_rem_write,
                  ep->cntr_rem_read})
    if (c != nullptr) cntr_unbind(c, ep);
  for (Cq* cq : {ep->txcq, ep->rxcq}) {
    if (cq == nullptr) continue;
    if (cq->internal) {
      cq_internal_close(cq);
    } else {
      cq->refs--;
    }
  }
  if (ep->srx != nullptr) ep->srx->refs--;
  if (ep->eq != nullptr) {
    eq_forget(ep->eq, &ep->ep.fid);
    ep->eq->refs--;
  }
  if (ep->creq != nullptr && ep->creq->fid_.fclass == FI_CLASS_CONNREQ) {
    // Never answered: the peer learns of it.
    if (!dat::cr_reject(ep->creq->cr, nullptr, 0).ok())
      FI_DBG(&g_prov, FI_LOG_EP_CTRL, "reject at close refused\n");
  }
  delete ep->creq;
  fi_freeinfo(ep->info);
  ep->dom->refs--;
  delete ep;
  return 0;
}

int ep_bind(fid* f, fid* bf, uint64_t flags) {
  auto* ep = reinterpret_cast<Ep*>(f);
  if (bf == nullptr) return -FI_EINVAL;
  if (ep->dep != nullptr) return -FI_EOPBADSTATE;
  if (Eq* eq = object_of<Eq>(bf, FI_CLASS_EQ); eq != nullptr) {
    if (int r = eq_attach(eq, ep->dom->pz->ia); r != 0) return r;
    if (ep->eq != nullptr) ep->eq->refs--;
    ep->eq = eq;
    eq->refs++;
    return 0;
  }
  if (Cq* cq = object_of<Cq>(bf, FI_CLASS_CQ); cq != nullptr) {
    if (cq->rdm) return -FI_EINVAL;  // a CQ of reliable-datagram endpoints
    if ((flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) != 0) return -FI_EBADFLAGS;
    if ((flags & (FI_TRANSMIT | FI_RECV)) == 0) return -FI_EINVAL;
    if (cq->dom->pz->ia->iface != ep->dom->pz->ia->iface) return -FI_EINVAL;
    cq->msg_bound = true;
    if ((flags & FI_TRANSMIT) != 0) {
      if (ep->txcq != nullptr) return -FI_EINVAL;
      ep->txcq = cq;
      ep->tx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
      cq->refs++;
    }
    if ((flags & FI_RECV) != 0) {
      if (ep->rxcq != nullptr) return -FI_EINVAL;
      ep->rxcq = cq;
      ep->rx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
      cq->refs++;
    }
    return 0;
  }
  if (Cntr* c = object_of<Cntr>(bf, FI_CLASS_CNTR); c != nullptr) {
    constexpr uint64_t kRemote = FI_REMOTE_READ | FI_REMOTE_WRITE;
    constexpr uint64_t kKinds = FI_SEND | FI_RECV | FI_READ | FI_WRITE | kRemote;
    if ((flags & ~kKinds) != 0) return -FI_EBADFLAGS;
    if ((flags & kKinds) == 0) return -FI_EINVAL;
    if (c->dom->pz->ia->iface != ep->dom->pz->ia->iface) return -FI_EINVAL;
    // The responder adds to the counter without an event that could write
    // its descriptor: fi_trywait and poll would sleep through remote
    // accesses.  (fi_cntr_wait on other wait objects sees them.)
    if ((flags & kRemote) != 0 && c->wait.fd >= 0) {
      FI_WARN(&g_prov, FI_LOG_EP_CTRL, "remote access counters take no FI_WAIT_FD\n");
      return -FI_ENOSYS;
    }
    if ((flags & FI_SEND) != 0) ep->cntr_send = c;
    if ((flags & FI_RECV) != 0) ep->cntr_recv = c;
    if ((flags & FI_READ) != 0) ep->cntr_read = c;
    if ((flags & FI_WRITE) != 0) ep->cntr_write = c;
    if ((flags & FI_REMOTE_WRITE) != 0) ep->cntr_rem_write = c;
    if ((flags & FI_REMOTE_READ) != 0) ep->cntr_rem_read = c;
    std::lock_guard lk(c->mu);
    if (std::find(c->eps.begin(), c->eps.end(), ep) == c->eps.end()) {
      c->eps.push_back(ep);
      c->refs++;
    }
    return 0;
  }
  if (Srx* s = object_of<Srx>(bf, FI_CLASS_SRX_CTX); s != nullptr) {
    if (flags != 0) return -FI_EBADFLAGS;
    if (s->dom != ep->dom) return -FI_EINVAL;  // the SRQ must be in the EP's PZ
    if (ep->srx != nullptr) return -FI_EINVAL;
    ep->srx = s;
    s->refs++;
    return 0;
  }
  if (bf->fclass == FI_CLASS_STX_CTX) return -FI_ENOSYS;
  return -FI_EINVAL;
}

int ep_control(fid* f, int command, void* arg) {
  auto* ep = reinterpret_cast<Ep*>(f);
  switch (command) {
    case FI_ENABLE:
      return enable(ep);
    default:
      return ops_flags_control(command, arg, &ep->tx_op_flags, &ep->rx_op_flags);
  }
}

int ep_getname(fid_t f, void* addr, size_t* addrlen) {
  auto* ep = reinterpret_cast<Ep*>(f);
  return put_name(make_sin(iface_ip(ep->dom->fab), ep->src_port), addr, addrlen);
}

// The source address of an endpoint not yet connecting: its port is what
// fi_getname reports (a connection's active side needs none on the wire).
int ep_setname(fid_t f, void* addr, size_t addrlen) {
  auto* ep = reinterpret_cast<Ep*>(f);
  uint32_t ip = 0;
  uint16_t port = 0;
  if (!parse_sin(addr, addrlen, &ip, &port)) return -FI_EINVAL;
  if (ip != 0 && ip != iface_ip(ep->dom->fab)) return -FI_EADDRNOTAVAIL;
  if (ep->peer_ip != 0 || ep->creq != nullptr) return -FI_EOPBADSTATE;
  ep->src_port = port;
  return 0;
}

int ep_getpeer(fid_ep* e, void* addr, size_t* addrlen) {
  auto* ep = reinterpret_cast<Ep*>(e);
  if (ep->peer_ip == 0) return -FI_ENOTCONN;
  return put_name(make_sin(ep->peer_ip, ep->peer_port), addr, addrlen);
}

int ep_connect(fid_ep* e, const void* addr, const void* param, size_t len) {
  auto* ep = reinterpret_cast<Ep*>(e);
  uint32_t ip = 0;
  uint16_t port = 0;
  if (!parse_sin(addr, sizeof(sockaddr_in), &ip, &port)) return -FI_EINVAL;
  if (len > kCmDataSize || (len > 0 && param == nullptr)) return -FI_EINVAL;
  if (int r = enable(ep); r != 0) return r;
  ep->peer_ip = ip;
  ep->peer_port = port;
  return to_fi(dat::ep_connect(ep->dep, ip, port, kConnectTimeoutUs,
                               static_cast<const uint8_t*>(param), static_cast<uint32_t>(len)));
}

int ep_accept(fid_ep* e, const void* param, size_t len) {
  auto* ep = reinterpret_cast<Ep*>(e);
  if (ep->creq == nullptr || ep->creq->fid_.fclass != FI_CLASS_CONNREQ) return -FI_EOPBADSTATE;
  if (len > wire::kCmRepPdata || (len > 0 && param == nullptr)) return -FI_EINVAL;
  if (int r = enable(ep); r != 0) return r;
  const int r = to_fi(dat::cr_accept(ep->creq->cr, ep->dep, static_cast<const uint8_t*>(param),
                                     static_cast<uint32_t>(len)));
  if (r == 0) ep->creq->fid_.fclass = FI_CLASS_UNSPEC;  // answered
  return r;
}

int ep_shutdown(fid_ep* e, uint64_t flags) {
  auto* ep = reinterpret_cast<Ep*>(e);
  if (flags != 0) return -FI_EBADFLAGS;
  if (ep->dep == nullptr) return -FI_ENOTCONN;
  return to_fi(dat::ep_disconnect(ep->dep, false));
}

fi_ops g_ep_fi_ops = {sizeof(fi_ops), ep_close, ep_bind,   ep_control,
                      no_ops_open,    no_tostr, no_ops_set};
fi_ops_ep g_ep_ops = {sizeof(fi_ops_ep), ep_cancel, ep_getopt,    ep_setopt,
                      ep_tx_ctx,         ep_rx_ctx, ep_size_left, ep_size_left};
fi_ops_cm g_ep_cm_ops = {sizeof(fi_ops_cm), ep_setname, ep_getname,     ep_getpeer,  ep_connect,
                         cm_listen_none,    ep_accept,  cm_reject_none, ep_shutdown, cm_join_none};

}  // namespace

bool pep_address(const fid* f, uint32_t* ip, uint16_t* port) {
  if (f == nullptr || f->fclass != FI_CLASS_PEP || f->ops != &g_pep_fi_ops) return false;
  const auto* pep = reinterpret_cast<const Pep*>(f);
  *ip = iface_ip(pep->fab);
  *port = pep->port;
  return true;
}

int pep_open(fid_fabric* fabric, fi_info* info, fid_pep** out, void* context) {
  auto* fab = object_of<Fabric>(&fabric->fid, FI_CLASS_FABRIC);
  if (fab == nullptr || info == nullptr || out == nullptr) return -FI_EINVAL;
  if (info->ep_attr != nullptr && info->ep_attr->type != FI_EP_MSG) return -FI_EINVAL;
  if (int r = fabric_pick(fab, info); r != 0) return r;
  uint16_t port = 0;
  if (info->src_addr != nullptr) {
    uint32_t ip = 0;
    if (!parse_sin(info->src_addr, info->src_addrlen, &ip, &port)) return -FI_EINVAL;
    if (ip != 0 && ip != iface_ip(fab)) return -FI_EADDRNOTAVAIL;
  }
  auto* pep = new Pep();
  pep->info = fi_dupinfo(info);
  if (pep->info == nullptr) {
    delete pep;
    return -FI_ENOMEM;
  }
  pep->fab = fab;
  pep->port = port;
  pep->pep.fid.fclass = FI_CLASS_PEP;
  pep->pep.fid.context = context;
  pep->pep.fid.ops = &g_pep_fi_ops;
  pep->pep.ops = &g_pep_ep_ops;
  pep->pep.cm = &g_pep_cm_ops;
  {
    std::lock_guard lk(fab->mu);
    fab->refs++;
  }
  *out = &pep->pep;
  return 0;
}

int ep_open(fid_domain* domain, fi_info* info, fid_ep** out, void* context) {
  auto* d = object_of<Domain>(&domain->fid, FI_CLASS_DOMAIN);
  if (d == nullptr || info == nullptr || out == nullptr) return -FI_EINVAL;
  if (info->ep_attr != nullptr && info->ep_attr->type == FI_EP_RDM)
    return rdm_ep_open(domain, info, out, context);
  if (info->ep_attr != nullptr && info->ep_attr->type != FI_EP_MSG) return -FI_EINVAL;
  if (info->tx_attr != nullptr && (info->tx_attr->size > d->fab->ia->iface->limits.max_dto_per_ep ||
                                   info->tx_attr->iov_limit > rc::kMaxSge))
    return -FI_EINVAL;
  // The EP owns the connection request from here on (freed with it); a
  // passive endpoint as the handle lends it its bound address.
  ConnReq* creq = nullptr;
  uint32_t src_ip = 0;
  uint16_t src_port = 0;
  if (info->handle != nullptr) {
    creq = object_of<ConnReq>(info->handle, FI_CLASS_CONNREQ);
    if (creq == nullptr && !pep_address(info->handle, &src_ip, &src_port)) return -FI_EINVAL;
  } else if (info->src_addr != nullptr &&
             (!parse_sin(info->src_addr, info->src_addrlen, &src_ip, &src_port) ||
              (src_ip != 0 && src_ip != iface_ip(d->fab)))) {
    return -FI_EADDRNOTAVAIL;
  }
  auto* ep = new Ep();
  ep->info = fi_dupinfo(info);
  if (ep->info == nullptr) {
    delete ep;
    return -FI_ENOMEM;
  }
  ep->info->handle = nullptr;
  ep->dom = d;
  ep->creq = creq;
  ep->src_port = src_port;
  if (creq != nullptr) {
    uint16_t port = 0;
    if (ep->info->dest_addr != nullptr &&
        !parse_sin(ep->info->dest_addr, ep->info->dest_addrlen, &ep->peer_ip, &port))
      ep->peer_ip = 0;
    uint32_t ip = 0;
    if (ep->info->src_addr != nullptr &&
        parse_sin(ep->info->src_addr, ep->info->src_addrlen, &ip, &port))
      ep->src_port = port;  // the listener's address
  }
  ep->tx_op_flags = ep->info->tx_attr != nullptr ? ep->info->tx_attr->op_flags : 0;
  ep->rx_op_flags = ep->info->rx_attr != nullptr ? ep->info->rx_attr->op_flags : 0;
  ep->ep.fid.fclass = FI_CLASS_EP;
  ep->ep.fid.context = context;
  ep->ep.fid.ops = &g_ep_fi_ops;
  ep->ep.ops = &g_ep_ops;
  ep->ep.cm = &g_ep_cm_ops;
  ep->ep.msg = &g_msg_ops;
  ep->ep.rma = &g_rma_ops;
  ep->ep.atomic = &g_atomic_ops;
  d->refs++;
  *out = &ep->ep;
  return 0;
}

int put_name(const sockaddr_in& s, void* addr, size_t* addrlen) {
  if (addrlen == nullptr) return -FI_EINVAL;
  const size_t have = *addrlen;
  *addrlen = sizeof(s);
  if (addr == nullptr || have < sizeof(s)) return -FI_ETOOSMALL;
  std::memcpy(addr, &s, sizeof(s));
  return 0;
}

int ops_flags_control(int command, void* arg, uint64_t* tx, uint64_t* rx) {
  switch (command) {
    case FI_GETOPSFLAG: {
      if (arg == nullptr) return -FI_EINVAL;
      auto* fl = static_cast<uint64_t*>(arg);
      if ((*fl & FI_TRANSMIT) != 0 && (*fl & FI_RECV) != 0) return -FI_EINVAL;
      if ((*fl & FI_TRANSMIT) != 0) *fl = *tx | FI_TRANSMIT;
      if ((*fl & FI_RECV) != 0) *fl = *rx | FI_RECV;
      return 0;
    }
    case FI_SETOPSFLAG: {
      if (arg == nullptr) return -FI_EINVAL;
      const uint64_t fl = *static_cast<uint64_t*>(arg);
      if ((fl & FI_TRANSMIT) != 0 && (fl & FI_RECV) != 0) return -FI_EINVAL;
      if ((fl & FI_TRANSMIT) != 0) *tx = fl & ~(FI_TRANSMIT | FI_RECV);
      if ((fl & FI_RECV) != 0) *rx = fl & ~(FI_TRANSMIT | FI_RECV);
      return 0;
    }
    default:
      return -FI_ENOSYS;
  }
}

}  // namespace dpdat::ofi
