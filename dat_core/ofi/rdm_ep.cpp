// The reliable-datagram endpoint's life (open, bind, enable, close), its
// connections (made on the first send to a peer, accepted from any peer) and
// its progress, and the CQs bound to it (rdm.hpp says how it works).

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "rdm.hpp"

namespace dpdat::ofi {

namespace {

constexpr int64_t kDtoEvdLen = 4096;
constexpr int64_t kCmEvdLen = 1024;
constexpr int kDtoBatch = 64;  // events one progress pass takes

RdmEp* rdm_cast(fid* f) { return reinterpret_cast<RdmEp*>(f); }

Conn* conn_of(const dat::Ep* dep) {
  return dep != nullptr && dep->context != 0
             ? reinterpret_cast<Conn*>(static_cast<uintptr_t>(dep->context))
             : nullptr;
}

// A DAT EP for a connection of ep, its context the connection.
int make_dep(RdmEp* ep, Conn* c) {
  dat::Ia* ia = ep->dom->pz->ia;
  dat::EpAttr a;
  // Sends and internal FINs, and the READs of the messages it brings.
  a.max_request_dtos = 2 * rdm::kTxOps;
  dat::Status st = dat::ep_create(ia, ep->dom->pz, ep->dto, ep->dto, ep->cm, &a, &c->dep, ep->srq);
  if (!st.ok()) return to_fi(st);
  dat::Lock lk(ia->iface);
  c->dep->context = reinterpret_cast<uintptr_t>(c);
  c->dep->context_set = true;
  return 0;
}

void conn_down(RdmEp* ep, Conn* c) {
  if (c->dead) return;
  if (c->outbound && !c->up) ep->connecting--;
  c->dead = true;
  c->up = false;
  if (c->outbound && c->addr < ep->out.size() && ep->out[c->addr] == c) {
    ep->out[c->addr] = nullptr;
    if (ep->out_fails[c->addr] < 255) ep->out_fails[c->addr]++;
  }
  rdm_conn_failed(ep, c);
}

// A peer's connection request: accepted when it says who the peer is.
void accept_request(RdmEp* ep, const dat::Event& ev) {
  dat::Cr* cr = dat::lookup<dat::Cr>(ev.cr, dat::HandleType::kCr);
  if (cr == nullptr) return;
  std::vector<uint8_t> pdata;
  {
    dat::Lock lk(cr->ia->iface);
    pdata = cr->pdata;
  }
  rdm::Hello hello;
  if (pdata.size() < sizeof(hello)) {
    (void)dat::cr_reject(cr, nullptr, 0);
    return;
  }
  std::memcpy(&hello, pdata.data(), sizeof(hello));
  if (hello.magic != rdm::kHelloMagic) {
    FI_WARN(&g_prov, FI_LOG_EP_CTRL, "connection request without an RDM hello: rejected\n");
    (void)dat::cr_reject(cr, nullptr, 0);
    return;
  }
  auto c = std::make_unique<Conn>();
  c->ep = ep;
  c->ip = hello.ip;
  c->port = hello.port;
  if (make_dep(ep, c.get()) != 0) {
    (void)dat::cr_reject(cr, nullptr, 0);
    return;
  }
  if (!dat::cr_accept(cr, c->dep, nullptr, 0).ok()) {
    if (dat::ep_free(c->dep).ok()) return;
    // An EP the interface keeps: its events must not name the connection,
    // which stays (dead) until the endpoint closes.
    {
      dat::Lock lk(ep->dom->pz->ia->iface);
      c->dep->context = 0;
    }
    c->dead = true;
  }
  ep->conns.push_back(std::move(c));
}

// The connection events waiting (the interface is driven by the DTO EVD's
// dequeue: taking these does not drive it a second time).
void cm_progress(RdmEp* ep) {
  dat::Event ev;
  while (dat::pop_event(ep->cm, &ev)) {
    if (ev.num == dat::EventNum::kConnRequest) {
      accept_request(ep, ev);
      continue;
    }
    Conn* c = conn_of(ev.ep);
    if (c == nullptr) continue;
    switch (ev.num) {
      case dat::EventNum::kEstablished:
        if (c->outbound && !c->up && !c->dead) ep->connecting--;
        c->up = !c->dead;
        if (c->outbound && c->addr < ep->out_fails.size()) ep->out_fails[c->addr] = 0;
        break;
      case dat::EventNum::kDisconnected:
      case dat::EventNum::kBroken:
      case dat::EventNum::kPeerRejected:
      case dat::EventNum::kNonPeerRejected:
      case dat::EventNum::kTimedOut:
      case dat::EventNum::kUnreachable:
      case dat::EventNum::kAcceptCompletionError:
        conn_down(ep, c);
        break;
      default:
        break;
    }
  }
}

void dto_progress(RdmEp* ep) {
  dat::Event ev;
  for (int n = 0; n < kDtoBatch && dat::evd_dequeue(ep->dto, &ev).ok(); ++n) {
    if (ev.num != dat::EventNum::kDto) continue;
    switch (ev.op) {
      case rc::WcOp::kRecv:
        rdm_on_recv(ep, conn_of(ev.ep), static_cast<uint32_t>(ev.cookie), ev);
        break;
      case rc::WcOp::kSend:
        rdm_on_send_done(ep, static_cast<uint32_t>(ev.cookie), ev);
        break;
      case rc::WcOp::kRead:
        rdm_on_read_done(ep, reinterpret_cast<RecvReq*>(static_cast<uintptr_t>(ev.cookie)), ev);
        break;
      default:
        break;
    }
  }
}

// ------------------------------------------------------------ fi_ops

int rdm_close(fid* f) {
  RdmEp* ep = rdm_cast(f);
  {
    dat::SpinLockGuard lk(ep->dom->rdm_mu);
    auto& v = ep->dom->rdm_eps;
    v.erase(std::remove(v.begin(), v.end(), ep), v.end());
  }
  {
    dat::SpinLockGuard lk(ep->mu);
    if (ep->sp != nullptr && !dat::sp_free(ep->sp).ok())
      FI_WARN(&g_prov, FI_LOG_EP_CTRL, "listener not freed\n");
    ep->sp = nullptr;
    for (auto& c : ep->conns) {
      if (c->dep == nullptr) continue;
      dat::EpStatus es;
      if (dat::ep_get_status(c->dep, &es).ok() && es.state != dat::EpState::kUnconnected &&
          es.state != dat::EpState::kDisconnected)
        (void)dat::ep_disconnect(c->dep, true);
      if (!dat::ep_free(c->dep).ok()) FI_WARN(&g_prov, FI_LOG_EP_CTRL, "connection not freed\n");
      c->dep = nullptr;
    }
    ep->conns.clear();
    rdm_release(ep);
    if (ep->srq != nullptr && !dat::srq_free(ep->srq).ok())
      FI_WARN(&g_prov, FI_LOG_EP_CTRL, "SRQ not freed\n");
    for (dat::Lmr* l : {ep->rx_lmr, ep->tx_lmr})
      if (l != nullptr && !dat::lmr_free(l).ok()) FI_WARN(&g_prov, FI_LOG_EP_CTRL, "lmr leak\n");
    for (dat::Evd* e : {ep->dto, ep->cm})
      if (e != nullptr && !dat::evd_free(e).ok()) FI_WARN(&g_prov, FI_LOG_EP_CTRL, "evd leak\n");
  }
  for (WaitFd* w : ep->listening) cq_unlisten(ep->waker, w);
  for (Cq* cq : {ep->txcq, ep->rxcq}) {
    if (cq == nullptr) continue;
    dat::SpinLockGuard lk(cq->rdm_mu);
    auto& v = cq->rdm_eps;
    v.erase(std::remove(v.begin(), v.end(), ep), v.end());
  }
  if (ep->txcq != nullptr) ep->txcq->refs--;
  if (ep->rxcq != nullptr) ep->rxcq->refs--;
  if (ep->av != nullptr) ep->av->refs--;
  for (Cntr* c : {ep->cntr_send, ep->cntr_recv})
    if (c != nullptr) cntr_unbind_rdm(c, ep);
  fi_freeinfo(ep->info);
  ep->dom->refs--;
  delete ep;
  return 0;
}

int bind_cq(RdmEp* ep, Cq* cq, uint64_t flags) {
  if ((flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) != 0) return -FI_EBADFLAGS;
  if ((flags & (FI_TRANSMIT | FI_RECV)) == 0) return -FI_EINVAL;
  if (cq->dom->pz->ia->iface != ep->dom->pz->ia->iface) return -FI_EINVAL;
  // A CQ of connected endpoints carries their EVD's events instead.
  if (cq->msg_bound) return -FI_EINVAL;
  if (((flags & FI_TRANSMIT) != 0 && ep->txcq != nullptr) ||
      ((flags & FI_RECV) != 0 && ep->rxcq != nullptr))
    return -FI_EINVAL;
  cq->rdm = true;
  if ((flags & FI_TRANSMIT) != 0) {
    ep->txcq = cq;
    ep->tx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
    cq->refs++;
  }
  if ((flags & FI_RECV) != 0) {
    ep->rxcq = cq;
    ep->rx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
    cq->refs++;
  }
  dat::SpinLockGuard lk(cq->rdm_mu);
  if (std::find(cq->rdm_eps.begin(), cq->rdm_eps.end(), ep) == cq->rdm_eps.end())
    cq->rdm_eps.push_back(ep);
  return 0;
}

int rdm_bind(fid* f, fid* bf, uint64_t flags) {
  RdmEp* ep = rdm_cast(f);
  if (bf == nullptr) return -FI_EINVAL;
  if (ep->enabled) return -FI_EOPBADSTATE;
  if (Av* av = object_of<Av>(bf, FI_CLASS_AV); av != nullptr) {
    if (flags != 0) return -FI_EBADFLAGS;
    if (av->dom != ep->dom || ep->av != nullptr) return -FI_EINVAL;
    ep->av = av;
    av->refs++;
    return 0;
  }
  if (Cq* cq = object_of<Cq>(bf, FI_CLASS_CQ); cq != nullptr) return bind_cq(ep, cq, flags);
  if (Cntr* c = object_of<Cntr>(bf, FI_CLASS_CNTR); c != nullptr) {
    if ((flags & ~static_cast<uint64_t>(FI_SEND | FI_RECV)) != 0) return -FI_EBADFLAGS;
    if (flags == 0 || c->dom->pz->ia->iface != ep->dom->pz->ia->iface) return -FI_EINVAL;
    // One counter per side.
    if (((flags & FI_SEND) != 0 && ep->cntr_send != nullptr && ep->cntr_send != c) ||
        ((flags & FI_RECV) != 0 && ep->cntr_recv != nullptr && ep->cntr_recv != c))
      return -FI_EINVAL;
    if ((flags & FI_SEND) != 0) ep->cntr_send = c;
    if ((flags & FI_RECV) != 0) ep->cntr_recv = c;
    std::lock_guard lk(c->mu);
    if (std::find(c->rdm_eps.begin(), c->rdm_eps.end(), ep) == c->rdm_eps.end()) {
      c->rdm_eps.push_back(ep);
      c->refs++;
    }
    return 0;
  }
  // EQs, shared contexts: not offered with this endpoint type.
  return -FI_ENOSYS;
}

// The eager limit: DPDAT_FI_EAGER (bytes, up to rdm::kEagerMax), else the
// default.
size_t eager_limit() {
  const char* s = std::getenv("DPDAT_FI_EAGER");
  if (s == nullptr || *s == '\0') return rdm::kEagerDefault;
  char* end = nullptr;
  const unsigned long v = std::strtoul(s, &end, 10);
  // An inject (up to kInjectSize) always travels eager: it returns before
  // the message leaves.
  if (end == s || *end != '\0' || v < kInjectSize || v > rdm::kEagerMax) {
    FI_WARN(&g_prov, FI_LOG_EP_CTRL, "DPDAT_FI_EAGER=%s: not %zu..%zu, default used\n", s,
            kInjectSize, rdm::kEagerMax);
    return rdm::kEagerDefault;
  }
  return v;
}

int enable(RdmEp* ep) {
  if (ep->enabled) return 0;
  // A failed enable leaves what it made for fi_close to free: not again.
  if (ep->dto != nullptr) return -FI_EOPBADSTATE;
  if (ep->av == nullptr) return -FI_ENOAV;
  // A side reports through its CQ, or counts with a counter alone.
  if ((ep->txcq == nullptr && ep->cntr_send == nullptr) ||
      (ep->rxcq == nullptr && ep->cntr_recv == nullptr))
    return -FI_ENOCQ;
  dat::Ia* ia = ep->dom->pz->ia;
  dat::SpinLockGuard lk(ep->mu);
  // FD wait objects: whatever reaches the endpoint's EVDs (a message, a
  // completion, a connection event) wakes its CQs' descriptors through the
  // CNO of one of them, the other listening; the consumer's read then
  // progresses the protocol (fi_trywait looks at the EVDs too).
  // Counters with descriptors listen the same way; counters alone (no CQ)
  // wake through the first one's own CNO.
  dat::Cno* cno = nullptr;
  Cq* waker = ep->rxcq != nullptr ? ep->rxcq : ep->txcq;
  std::vector<WaitFd*> fds;
  for (WaitFd* w : {ep->rxcq != nullptr ? &ep->rxcq->wait : nullptr,
                    ep->txcq != nullptr ? &ep->txcq->wait : nullptr,
                    ep->cntr_send != nullptr ? &ep->cntr_send->wait : nullptr,
                    ep->cntr_recv != nullptr ? &ep->cntr_recv->wait : nullptr})
    if (w != nullptr && w->fd >= 0 && std::find(fds.begin(), fds.end(), w) == fds.end())
      fds.push_back(w);
  if (waker != nullptr) {
    for (WaitFd* w : fds) {
      if (w == &waker->wait) continue;
      if (int r = cq_listen(waker, w); r != 0) return r;
      ep->listening.push_back(w);
    }
    if (!fds.empty()) cno = waker->wait.cno;
    ep->waker = waker;
  } else if (!fds.empty()) {
    if (fds.size() > 1) return -FI_ENOSYS;  // two counters' descriptors and no CQ
    if (int r = waitfd_attach(fds.front(), ia); r != 0) return r;
    cno = fds.front()->cno;
  }
  dat::Status st = dat::evd_create(ia, kDtoEvdLen, cno, dat::evd_flag::kDto, &ep->dto);
  if (st.ok())
    st = dat::evd_create(ia, kCmEvdLen, cno, dat::evd_flag::kCr | dat::evd_flag::kConnection,
                         &ep->cm);
  if (st.ok()) st = dat::srq_create(ia, ep->dom->pz, rdm::kRxBufs, 1, 0, &ep->srq);
  if (!st.ok()) return to_fi(st);
  ep->eager = eager_limit();
  ep->rxbuf_size = sizeof(rdm::Hdr) + std::max(ep->eager, sizeof(rdm::Rts));
  ep->rxmem.assign(ep->rxbuf_size * rdm::kRxBufs, 0);
  ep->txmem.assign(rdm::kSlotSize * rdm::kTxOps, 0);
  for (auto [mem, lmr] : {std::pair{&ep->rxmem, &ep->rx_lmr}, std::pair{&ep->txmem, &ep->tx_lmr}}) {
    dat::LmrSpec s;
    s.host = mem->data();
    s.va = reinterpret_cast<uintptr_t>(mem->data());
    s.length = mem->size();
    st = dat::lmr_create(ia, ep->dom->pz, s, rc::priv::kLocalRead | rc::priv::kLocalWrite, lmr);
    if (!st.ok()) return to_fi(st);
  }
  ep->tx.assign(rdm::kTxOps, TxOp{});
  ep->tx_free.clear();
  for (uint32_t i = rdm::kTxOps; i-- > 0;) ep->tx_free.push_back(i);
  for (uint32_t i = 0; i < rdm::kRxBufs; ++i) rdm_repost(ep, i);
  rdm_repost_flush(ep);
  // The listening port: the bound one, else the first free of the
  // ephemeral range.
  if (ep->port != 0) {
    st = dat::psp_create(ia, ep->port, ep->cm, 0, &ep->sp);
  } else {
    st = dat::fail(dat::Type::CONN_QUAL_IN_USE);
    for (uint32_t port = 49152; port <= 65535 && st.type == dat::Type::CONN_QUAL_IN_USE; ++port) {
      st = dat::psp_create(ia, port, ep->cm, 0, &ep->sp);
      if (st.ok()) ep->port = static_cast<uint16_t>(port);
    }
  }
  if (!st.ok()) return to_fi(st);
  ep->enabled = true;
  dat::SpinLockGuard dl(ep->dom->rdm_mu);
  ep->dom->rdm_eps.push_back(ep);
  return 0;
}

int rdm_control(fid* f, int command, void* arg) {
  RdmEp* ep = rdm_cast(f);
  switch (command) {
    case FI_ENABLE:
      return enable(ep);
    default:
      return ops_flags_control(command, arg, &ep->tx_op_flags, &ep->rx_op_flags);
  }
}

int rdm_getname(fid_t f, void* addr, size_t* addrlen) {
  RdmEp* ep = rdm_cast(f);
  if (addrlen == nullptr) return -FI_EINVAL;
  // The port is settled at fi_enable (an ephemeral one is picked then).
  if (!ep->enabled && ep->port == 0) return -FI_EOPBADSTATE;
  return put_name(make_sin(ep->ip, ep->port), addr, addrlen);
}

int rdm_setname(fid_t f, void* addr, size_t addrlen) {
  RdmEp* ep = rdm_cast(f);
  uint32_t ip = 0;
  uint16_t port = 0;
  if (!parse_sin(addr, addrlen, &ip, &port)) return -FI_EINVAL;
  if (ip != 0 && ip != ep->ip) return -FI_EADDRNOTAVAIL;
  if (ep->enabled) return -FI_EOPBADSTATE;
  ep->port = port;
  return 0;
}

int rdm_getopt(fid_t, int, int, void*, size_t*) { return -FI_ENOPROTOOPT; }
int rdm_setopt(fid_t, int, int, const void*, size_t) { return -FI_ENOPROTOOPT; }
int rdm_tx_ctx(fid_ep*, int, fi_tx_attr*, fid_ep**, void*) { return -FI_ENOSYS; }
int rdm_rx_ctx(fid_ep*, int, fi_rx_attr*, fid_ep**, void*) { return -FI_ENOSYS; }
ssize_t rdm_size_left(fid_ep*) { return -FI_ENOSYS; }
int rdm_cm_getpeer(fid_ep*, void*, size_t*) { return -FI_ENOSYS; }
int rdm_cm_connect(fid_ep*, const void*, const void*, size_t) { return -FI_ENOSYS; }
int rdm_cm_listen(fid_pep*) { return -FI_ENOSYS; }
int rdm_cm_accept(fid_ep*, const void*, size_t) { return -FI_ENOSYS; }
int rdm_cm_reject(fid_pep*, fid_t, const void*, size_t) { return -FI_ENOSYS; }
int rdm_cm_shutdown(fid_ep*, uint64_t) { return -FI_ENOSYS; }
int rdm_cm_join(fid_ep*, const void*, uint64_t, fid_mc**, void*) { return -FI_ENOSYS; }

fi_ops g_rdm_fi_ops = {sizeof(fi_ops), rdm_close, rdm_bind,  rdm_control,
                       no_ops_open,    no_tostr,  no_ops_set};
fi_ops_ep g_rdm_ep_ops = {sizeof(fi_ops_ep), rdm_cancel, rdm_getopt,    rdm_setopt,
                          rdm_tx_ctx,        rdm_rx_ctx, rdm_size_left, rdm_size_left};
fi_ops_cm g_rdm_cm_ops = {sizeof(fi_ops_cm), rdm_setname,   rdm_getname,   rdm_cm_getpeer,
                          rdm_cm_connect,    rdm_cm_listen, rdm_cm_accept, rdm_cm_reject,
                          rdm_cm_shutdown,   rdm_cm_join};

}  // namespace

void rdm_progress(RdmEp* ep) {
  if (!ep->enabled) return;
  if (ep->connecting > 0 || ++ep->passes % rdm::kCmEvery == 0) {
    cm_progress(ep);
    // The domain's other endpoints answer their connection requests too: a
    // consumer that drives one endpoint while it waits for a peer must not
    // wait for ever because that peer waits for another of its endpoints
    // (fabtests' fi_multi_ep).  One busy elsewhere is left alone.
    dat::SpinLockGuard lk(ep->dom->rdm_mu);
    for (RdmEp* s : ep->dom->rdm_eps) {
      if (s == ep || !s->mu.try_lock()) continue;
      cm_progress(s);
      s->mu.unlock();
    }
  }
  dto_progress(ep);
  rdm_retry(ep);
}

int rdm_conn_for(RdmEp* ep, fi_addr_t a, Conn** out) {
  if (a < ep->out.size() && ep->out[a] != nullptr) {
    *out = ep->out[a];
    return ep->out[a]->up ? 0 : -FI_EAGAIN;
  }
  uint32_t ip = 0;
  uint16_t port = 0;
  if (!av_get(ep->av, a, &ip, &port)) return -FI_EINVAL;
  if (a >= ep->out.size()) {
    ep->out.resize(a + 1, nullptr);
    ep->out_fails.resize(a + 1, 0);
  }
  if (ep->out_fails[a] >= rdm::kConnectTries) return -FI_EHOSTUNREACH;
  auto c = std::make_unique<Conn>();
  c->ep = ep;
  c->ip = ip;
  c->port = port;
  c->outbound = true;
  c->addr = a;
  if (int r = make_dep(ep, c.get()); r != 0) return r;
  rdm::Hello hello;
  hello.magic = rdm::kHelloMagic;
  hello.ip = ep->ip;
  hello.port = ep->port;
  dat::Status st = dat::ep_connect(c->dep, ip, port, kConnectTimeoutUs,
                                   reinterpret_cast<const uint8_t*>(&hello), sizeof(hello));
  if (!st.ok()) {
    (void)dat::ep_free(c->dep);
    ep->out_fails[a]++;
    return to_fi(st);
  }
  ep->out[a] = c.get();
  ep->connecting++;
  *out = c.get();
  ep->conns.push_back(std::move(c));
  return -FI_EAGAIN;
}

fi_addr_t rdm_conn_addr(RdmEp* ep, Conn* c) {
  if (c == nullptr) return FI_ADDR_NOTAVAIL;
  if (c->addr == FI_ADDR_NOTAVAIL) c->addr = av_find(ep->av, c->ip, c->port);
  return c->addr;
}

void rdm_repost(RdmEp* ep, uint32_t i) {
  ep->repost.push_back(i);
  if (ep->repost.size() >= rdm::kRepostBatch) rdm_repost_flush(ep);
}

void rdm_repost_flush(RdmEp* ep) {
  const auto n = static_cast<uint32_t>(ep->repost.size());
  if (n == 0) return;
  // Each buffer waits here at most once: kRxBufs entries at most (no
  // allocation on the receive path).
  std::array<rc::Sge, rdm::kRxBufs> sge;
  std::array<uint64_t, rdm::kRxBufs> cookie;
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = ep->repost[k];
    sge[k] = rc::Sge{ep->rx_lmr->lmr_context,
                     reinterpret_cast<uintptr_t>(ep->rxmem.data() + size_t{i} * ep->rxbuf_size),
                     ep->rxbuf_size};
    cookie[k] = i;
  }
  uint32_t posted = 0;
  if (!dat::srq_post_recv_many(ep->srq, sge.data(), cookie.data(), n, &posted).ok())
    FI_WARN(&g_prov, FI_LOG_EP_DATA, "%u of %u receive buffers not reposted\n", n - posted, n);
  ep->repost.erase(ep->repost.begin(), ep->repost.begin() + posted);
}

void rdm_poll(RdmEp* ep) {
  dat::SpinLockGuard lk(ep->mu);
  rdm_progress(ep);
}

bool rdm_evds_pending(RdmEp* ep) {
  return ep->enabled && (!ep->dto->q.empty() || !ep->cm->q.empty());
}

int rdm_cq_trywait(Cq* cq) {
  if (rdm_cq_ready(cq)) return -FI_EAGAIN;
  waitfd_arm(&cq->wait);
  // What reached the endpoints' EVDs before the descriptor was armed.
  bool pending = false;
  {
    dat::SpinLockGuard lk(cq->rdm_mu);
    for (RdmEp* ep : cq->rdm_eps) pending |= rdm_evds_pending(ep);
  }
  if (!pending) return 0;
  waitfd_disarm(&cq->wait);
  return -FI_EAGAIN;
}

bool rdm_cq_ready(Cq* cq) {
  // A read of no entry progresses the endpoints.
  fi_cq_tagged_entry none;
  (void)rdm_cq_read(cq, &none, 0, nullptr);
  dat::SpinLockGuard lk(cq->rdm_mu);
  return !cq->rdm_q.empty();
}

void rdm_deliver(Cq* cq, const RdmEntry& e) {
  if (cq == nullptr) return;
  dat::SpinLockGuard lk(cq->rdm_mu);
  cq->rdm_q.push_back(e);
}

ssize_t rdm_cq_read(Cq* cq, void* buf, size_t count, fi_addr_t* src) {
  if (buf == nullptr && count > 0) return -FI_EINVAL;
  RdmEp* few[8];
  std::vector<RdmEp*> many;
  RdmEp** eps = few;
  size_t neps = 0;
  // The endpoints move on at every read, also one that finds an error
  // entry waiting (a consumer peeking in a loop reads nothing else).
  {
    dat::SpinLockGuard lk(cq->rdm_mu);
    neps = cq->rdm_eps.size();
    if (neps > std::size(few)) {
      many = cq->rdm_eps;
      eps = many.data();
    } else {
      std::copy(cq->rdm_eps.begin(), cq->rdm_eps.end(), few);
    }
  }
  // Endpoints close under the consumer's own order (never while it reads
  // their CQ), so the pointers stay good for this pass.
  for (size_t i = 0; i < neps; ++i) {
    dat::SpinLockGuard lk(eps[i]->mu);
    rdm_progress(eps[i]);
  }
  dat::SpinLockGuard lk(cq->rdm_mu);
  auto* out = static_cast<uint8_t*>(buf);
  size_t n = 0;
  while (n < count && !cq->rdm_q.empty() && !cq->rdm_q.front().is_err) {
    const RdmEntry& e = cq->rdm_q.front();
    switch (cq->format) {
      case FI_CQ_FORMAT_CONTEXT: {
        fi_cq_entry c{e.e.op_context};
        std::memcpy(out, &c, sizeof(c));
        out += sizeof(c);
        break;
      }
      case FI_CQ_FORMAT_MSG: {
        fi_cq_msg_entry c{e.e.op_context, e.e.flags, e.e.len};
        std::memcpy(out, &c, sizeof(c));
        out += sizeof(c);
        break;
      }
      case FI_CQ_FORMAT_DATA: {
        fi_cq_data_entry c{e.e.op_context, e.e.flags, e.e.len, e.e.buf, e.e.data};
        std::memcpy(out, &c, sizeof(c));
        out += sizeof(c);
        break;
      }
      default:
        std::memcpy(out, &e.e, sizeof(e.e));
        out += sizeof(e.e);
        break;
    }
    if (src != nullptr) src[n] = e.src;
    cq->rdm_q.pop_front();
    ++n;
  }
  if (n > 0) return static_cast<ssize_t>(n);
  return !cq->rdm_q.empty() && cq->rdm_q.front().is_err ? -FI_EAVAIL : -FI_EAGAIN;
}

ssize_t rdm_cq_readerr(Cq* cq, fi_cq_err_entry* buf) {
  dat::SpinLockGuard lk(cq->rdm_mu);
  if (cq->rdm_q.empty() || !cq->rdm_q.front().is_err) return -FI_EAGAIN;
  const RdmEntry& e = cq->rdm_q.front();
  void* user_data = buf->err_data;
  const size_t user_size = buf->err_data_size;
  *buf = fi_cq_err_entry{};
  buf->op_context = e.e.op_context;
  buf->flags = e.e.flags;
  buf->len = e.e.len;
  buf->buf = e.e.buf;
  buf->data = e.e.data;
  buf->tag = e.e.tag;
  buf->olen = e.olen;
  buf->err = e.err;
  buf->prov_errno = -e.err;
  buf->err_data = user_size > 0 ? user_data : nullptr;
  buf->err_data_size = 0;
  cq->rdm_q.pop_front();
  return 1;
}

int rdm_ep_open(fid_domain* domain, fi_info* info, fid_ep** out, void* context) {
  auto* d = object_of<Domain>(&domain->fid, FI_CLASS_DOMAIN);
  if (d == nullptr || info == nullptr || out == nullptr) return -FI_EINVAL;
  uint32_t ip = 0;
  uint16_t port = 0;
  if (info->src_addr != nullptr && (!parse_sin(info->src_addr, info->src_addrlen, &ip, &port) ||
                                    (ip != 0 && ip != d->fab->cfg.ip)))
    return -FI_EADDRNOTAVAIL;
  auto* ep = new RdmEp();
  ep->info = fi_dupinfo(info);
  if (ep->info == nullptr) {
    delete ep;
    return -FI_ENOMEM;
  }
  ep->dom = d;
  ep->ip = d->fab->cfg.ip;
  ep->port = port;
  const uint64_t caps =
      info->rx_attr != nullptr && info->rx_attr->caps != 0 ? info->rx_attr->caps : info->caps;
  ep->directed = (caps & FI_DIRECTED_RECV) != 0;
  ep->tx_op_flags = info->tx_attr != nullptr ? info->tx_attr->op_flags : 0;
  ep->rx_op_flags = info->rx_attr != nullptr ? info->rx_attr->op_flags : 0;
  ep->ep.fid.fclass = FI_CLASS_EP;
  ep->ep.fid.context = context;
  ep->ep.fid.ops = &g_rdm_fi_ops;
  ep->ep.ops = &g_rdm_ep_ops;
  ep->ep.cm = &g_rdm_cm_ops;
  ep->ep.msg = &g_rdm_msg_ops;
  ep->ep.tagged = &g_rdm_tagged_ops;
  d->refs++;
  *out = &ep->ep;
  return 0;
}

}  // namespace dpdat::ofi
