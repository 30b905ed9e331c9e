// The reliable-datagram endpoint's messages: fi_send* / fi_tsend* (eager
// or RTS), fi_recv* / fi_trecv* (matched against the unexpected messages,
// else queued), and what comes in (eager payloads, RTSs to READ, FINs); see
// rdm.hpp.

#include <algorithm>
#include <cstring>

#include "rdm.hpp"

namespace dpdat::ofi {

namespace {

RdmEp* rdm_cast(fid_ep* e) { return reinterpret_cast<RdmEp*>(e); }

uint8_t* slot(RdmEp* ep, uint32_t i) { return ep->txmem.data() + size_t{i} * rdm::kSlotSize; }
uint8_t* rxbuf(RdmEp* ep, uint32_t i) { return ep->rxmem.data() + size_t{i} * ep->rxbuf_size; }

uint64_t kind_flags(bool tagged) { return tagged ? FI_TAGGED : FI_MSG; }

// Receives come from the endpoint's free list (no allocation per message).
RecvReq* new_req(RdmEp* ep) {
  if (ep->req_pool.empty()) return new RecvReq();
  RecvReq* r = ep->req_pool.back();
  ep->req_pool.pop_back();
  *r = RecvReq{};
  return r;
}
void free_req(RdmEp* ep, RecvReq* r) {
  if (ep->req_pool.size() < rdm::kReqPool) {
    ep->req_pool.push_back(r);
  } else {
    delete r;
  }
}

// ------------------------------------------------------------ send side

// A consumer's send takes a slot only while kFinReserve stay free for the
// FINs: an RTS holds its slot until the peer's FIN comes, and peers whose
// slots all waited so would never send each other the FINs that free them.
int take_tx(RdmEp* ep, uint32_t* out, bool fin = false) {
  if (ep->tx_free.empty() || (!fin && ep->tx_free.size() <= rdm::kFinReserve)) return -FI_EAGAIN;
  *out = ep->tx_free.back();
  ep->tx_free.pop_back();
  TxOp& t = ep->tx[*out];
  const uint32_t gen = t.gen + 1;
  t = TxOp{};
  t.gen = gen;
  t.busy = true;
  return 0;
}

void free_tx(RdmEp* ep, uint32_t i) {
  TxOp& t = ep->tx[i];
  if (t.lmr != nullptr && !dat::lmr_free(t.lmr).ok())
    FI_WARN(&g_prov, FI_LOG_EP_DATA, "RTS registration not freed\n");
  t.lmr = nullptr;
  t.staging.clear();
  t.staging.shrink_to_fit();
  t.busy = false;
  ep->tx_free.push_back(i);
}

uint64_t tx_id(const RdmEp* ep, uint32_t i) { return (uint64_t{ep->tx[i].gen} << 32) | i; }

// A send's completion (err 0) or failure, when its consumer hears of it.
void report_tx(RdmEp* ep, const TxOp& t, int err) {
  if (ep->cntr_send != nullptr) cntr_bump(ep->cntr_send, err == 0);
  if (err != 0)
    FI_WARN(&g_prov, FI_LOG_EP_DATA, "%s to %#x:%u failed: %s\n",
            t.kind == rdm::kRts ? "rendezvous send" : "send", t.conn != nullptr ? t.conn->ip : 0,
            t.conn != nullptr ? unsigned{t.conn->port} : 0U, fi_strerror(err));
  // A send the consumer asked no completion of reports its failure too,
  // but an inject has no context to name (the log and the counter say it).
  if ((!t.report && err == 0) || (err != 0 && t.silent)) return;
  RdmEntry e;
  e.e.op_context = t.context;
  e.e.flags = FI_SEND | kind_flags(t.tagged);
  e.is_err = err != 0;
  e.err = err;
  rdm_deliver(ep->txcq, e);
}

// Posts the SEND of slot i (its first `hdr` bytes) followed by the
// consumer's iovecs (count 0: the slot alone).
int post_send(RdmEp* ep, Conn* c, uint32_t i, size_t hdr, const iovec* iov, void* const* desc,
              size_t count) {
  rc::Sge sge[rc::kMaxSge];
  sge[0] = rc::Sge{ep->tx_lmr->lmr_context, reinterpret_cast<uintptr_t>(slot(ep, i)), hdr};
  uint64_t total = 0;
  if (count > 0) {
    if (int r = iov_sges(ep->dom, iov, desc, count, sge + 1, &total, false); r != 0) return r;
  }
  dat::PostArgs a;
  a.op = rc::WrOp::kSend;
  a.sge = sge;
  a.nsge = static_cast<uint32_t>(count + 1);
  a.cookie = i;
  return to_fi(dat::ep_post(c->dep, a));
}

void send_fin(RdmEp* ep, Conn* c, uint64_t id, bool failed = false) {
  uint32_t i = 0;
  if (c->dead) return;
  if (take_tx(ep, &i, true) != 0) {
    ep->fins.push_back(RdmEp::PendingFin{c, id, failed});
    return;
  }
  TxOp& t = ep->tx[i];
  t.kind = rdm::kFin;
  t.conn = c;
  rdm::Hdr h;
  h.op = rdm::kFin;
  h.flags = failed ? rdm::kFinFailed : 0;
  h.id = id;
  std::memcpy(slot(ep, i), &h, sizeof(h));
  if (post_send(ep, c, i, sizeof(h), nullptr, nullptr, 0) != 0) {
    free_tx(ep, i);
    ep->fins.push_back(RdmEp::PendingFin{c, id, failed});
  }
}

struct SendArgs {
  const iovec* iov = nullptr;
  void* const* desc = nullptr;
  size_t count = 0;
  fi_addr_t dest = FI_ADDR_UNSPEC;
  uint64_t tag = 0;
  uint64_t data = 0;
  void* context = nullptr;
  uint64_t flags = 0;  // FI_INJECT, FI_COMPLETION, FI_REMOTE_CQ_DATA
  bool tagged = false;
  bool silent = false;  // fi_inject*: never a completion
};

ssize_t send_common(RdmEp* ep, const SendArgs& s) {
  if (!ep->enabled) return -FI_EOPBADSTATE;
  if (s.count > rc::kMaxSge - 1 || (s.count > 0 && s.iov == nullptr)) return -FI_EINVAL;
  size_t total = 0;
  for (size_t k = 0; k < s.count; ++k) total += s.iov[k].iov_len;
  const bool inject = (s.flags & FI_INJECT) != 0 || s.silent;
  if (inject && total > kInjectSize) return -FI_EMSGSIZE;
  if (total > ep->info->ep_attr->max_msg_size) return -FI_EMSGSIZE;
  dat::SpinLockGuard lk(ep->mu);
  // A send that must wait (its connection is being made, every slot is in
  // flight) moves the endpoint on before it says so; others do not, the
  // consumer's CQ reads do.
  Conn* c = nullptr;
  uint32_t i = 0;
  if (int r = rdm_conn_for(ep, s.dest, &c); r != 0) {
    if (r == -FI_EAGAIN) rdm_progress(ep);
    return r;
  }
  if (take_tx(ep, &i) != 0) {
    rdm_progress(ep);
    return -FI_EAGAIN;
  }
  TxOp& t = ep->tx[i];
  t.context = s.context;
  t.tagged = s.tagged;
  t.tag = s.tag;
  t.conn = c;
  t.report = !s.silent && (!ep->tx_selective || ((s.flags | ep->tx_op_flags) & FI_COMPLETION) != 0);
  t.silent = s.silent;
  rdm::Hdr h;
  h.flags = static_cast<uint8_t>((s.tagged ? rdm::kTagged : 0) |
                                 ((s.flags & FI_REMOTE_CQ_DATA) != 0 ? rdm::kHasData : 0));
  h.data = s.data;
  h.tag = s.tag;
  h.len = total;
  int r = 0;
  if (total <= ep->eager) {
    t.kind = rdm::kEager;
    h.op = rdm::kEager;
    std::memcpy(slot(ep, i), &h, sizeof(h));
    if (total <= kInjectSize) {
      // Small: copied behind the header (the buffer is free at return).
      uint8_t* p = slot(ep, i) + sizeof(h);
      for (size_t k = 0; k < s.count; ++k) {
        if (s.iov[k].iov_len > 0) std::memcpy(p, s.iov[k].iov_base, s.iov[k].iov_len);
        p += s.iov[k].iov_len;
      }
      r = post_send(ep, c, i, sizeof(h) + total, nullptr, nullptr, 0);
    } else {
      r = post_send(ep, c, i, sizeof(h), s.iov, s.desc, s.count);
    }
  } else {
    // RTS: the receiver READs the source through a registration made for it.
    t.kind = rdm::kRts;
    h.op = rdm::kRts;
    h.id = tx_id(ep, i);
    const uint8_t* src = nullptr;
    if (s.count == 1) {
      src = static_cast<const uint8_t*>(s.iov[0].iov_base);
    } else {
      t.staging.resize(total);
      size_t off = 0;
      for (size_t k = 0; k < s.count; ++k) {
        std::memcpy(t.staging.data() + off, s.iov[k].iov_base, s.iov[k].iov_len);
        off += s.iov[k].iov_len;
      }
      src = t.staging.data();
    }
    dat::LmrSpec spec;
    spec.host = const_cast<uint8_t*>(src);
    spec.va = reinterpret_cast<uintptr_t>(src);
    spec.length = total;
    dat::Status st = dat::lmr_create(ep->dom->pz->ia, ep->dom->pz, spec,
                                     rc::priv::kLocalRead | rc::priv::kRemoteRead, &t.lmr);
    if (!st.ok()) {
      free_tx(ep, i);
      return to_fi(st);
    }
    rdm::Rts rts;
    rts.h = h;
    rts.va = spec.va;
    rts.rkey = t.lmr->rmr_context;
    std::memcpy(slot(ep, i), &rts, sizeof(rts));
    r = post_send(ep, c, i, sizeof(rts), nullptr, nullptr, 0);
  }
  if (r != 0) free_tx(ep, i);
  return r;
}

// ------------------------------------------------------------ receive side

// Whether message h from connection c is what r waits for.
bool matches(RdmEp* ep, const RecvReq* r, Conn* c, const rdm::Hdr& h) {
  if (r->tagged && ((h.tag ^ r->tag) & ~r->ignore) != 0) return false;
  if (ep->directed && r->src != FI_ADDR_UNSPEC && r->src != rdm_conn_addr(ep, c)) return false;
  return true;
}

void report_rx(RdmEp* ep, const RecvReq* r, Conn* c, uint64_t len, int err, size_t olen) {
  if (!r->report && err == 0) return;
  RdmEntry e;
  e.e.op_context = r->context;
  e.e.flags =
      FI_RECV | kind_flags(r->tagged) | ((r->h.flags & rdm::kHasData) != 0 ? FI_REMOTE_CQ_DATA : 0);
  e.e.len = len;
  e.e.buf = r->count > 0 ? r->iov[0].iov_base : nullptr;
  e.e.data = r->h.data;
  e.e.tag = r->tagged ? r->h.tag : 0;
  e.src = rdm_conn_addr(ep, c);
  e.is_err = err != 0;
  e.err = err;
  e.olen = olen;
  rdm_deliver(ep->rxcq, e);
}

// A receive that took a message completed (err 0) or failed: its counter.
void count_rx(RdmEp* ep, int err) {
  if (ep->cntr_recv != nullptr) cntr_bump(ep->cntr_recv, err == 0);
}

// Copies an eager payload into r and completes it (truncated: FI_ETRUNC).
void land_eager(RdmEp* ep, RecvReq* r, Conn* c, const rdm::Hdr& h, const uint8_t* p, uint64_t len) {
  r->h = h;
  uint64_t left = len;
  for (size_t k = 0; k < r->count && left > 0; ++k) {
    const uint64_t n = std::min<uint64_t>(left, r->iov[k].iov_len);
    std::memcpy(r->iov[k].iov_base, p, n);
    p += n;
    left -= n;
  }
  const uint64_t got = len - left;
  count_rx(ep, left > 0 ? FI_ETRUNC : 0);
  report_rx(ep, r, c, got, left > 0 ? FI_ETRUNC : 0, left);
  free_req(ep, r);
}

// Starts the READ of an RTS's payload into r (what fits), or queues it.
void start_read(RdmEp* ep, RecvReq* r, Conn* c, const rdm::Hdr& h, uint64_t va, uint32_t rkey) {
  r->h = h;
  r->conn = c;
  r->taken = std::min<uint64_t>(h.len, r->total);
  rc::Sge sge[rc::kMaxSge];
  uint64_t total = 0;
  int err = iov_sges(ep->dom, r->iov, r->desc, r->count, sge, &total, true);
  uint32_t n = 0;
  for (uint64_t left = r->taken; n < r->count && left > 0; ++n) {
    sge[n].length = std::min<uint64_t>(sge[n].length, left);
    left -= sge[n].length;
  }
  if (err == 0 && r->taken > 0) {
    const dat::RemoteSeg remote{rkey, va, r->taken};
    dat::PostArgs a;
    a.op = rc::WrOp::kRead;
    a.sge = sge;
    a.nsge = n;
    a.remote = &remote;
    a.cookie = reinterpret_cast<uintptr_t>(r);
    const dat::Status st = dat::ep_post(c->dep, a);
    if (st.ok()) {
      ep->reading.insert(r);
      return;
    }
    if (st.type == dat::Type::INSUFFICIENT_RESOURCES && !c->dead) {
      r->va = va;  // tried again when a completion makes room
      r->rkey = rkey;
      ep->reads.push_back(r);
      return;
    }
    err = to_fi(st);
  }
  // Nothing to READ (an empty receive), or the READ could not start.
  const uint64_t id = h.id;
  const int fail = err != 0 ? -err : (h.len > 0 ? FI_ETRUNC : 0);
  count_rx(ep, fail);
  report_rx(ep, r, c, 0, fail, h.len);
  free_req(ep, r);
  send_fin(ep, c, id, err != 0);
}

// A new message from c: the first receive it matches takes it, else it
// waits as unexpected.  p/len: an eager payload; va/rkey: an RTS's source.
void arrive(RdmEp* ep, Conn* c, const rdm::Hdr& h, const uint8_t* p, uint64_t len, uint64_t va,
            uint32_t rkey) {
  auto& posted = ep->posted[(h.flags & rdm::kTagged) != 0 ? 1 : 0];
  for (auto it = posted.begin(); it != posted.end(); ++it) {
    RecvReq* r = *it;
    if (!matches(ep, r, c, h)) continue;
    posted.erase(it);
    if (h.op == rdm::kEager) {
      land_eager(ep, r, c, h, p, len);
    } else {
      start_read(ep, r, c, h, va, rkey);
    }
    return;
  }
  auto* u = new Unexp();
  u->conn = c;
  u->h = h;
  u->va = va;
  u->rkey = rkey;
  if (h.op == rdm::kEager) u->payload.assign(p, p + len);
  ep->unexp[(h.flags & rdm::kTagged) != 0 ? 1 : 0].push_back(u);
}

// What a receive found among the unexpected messages: lands it.
void take_unexp(RdmEp* ep, RecvReq* r, Unexp* u) {
  if (u->h.op == rdm::kEager) {
    land_eager(ep, r, u->conn, u->h, u->payload.data(), u->payload.size());
  } else {
    start_read(ep, r, u->conn, u->h, u->va, u->rkey);
  }
  delete u;
}

struct RecvArgs {
  const iovec* iov = nullptr;
  void* const* desc = nullptr;
  size_t count = 0;
  fi_addr_t src = FI_ADDR_UNSPEC;
  uint64_t tag = 0, ignore = 0;
  void* context = nullptr;
  uint64_t flags = 0;
  bool tagged = false;
};

// FI_DISCARD of an unexpected message (off its list): an RTS's sender is
// told it is done; the discarding receive completes with no data.
void discard(RdmEp* ep, RecvReq* r, Unexp* u) {
  r->h = u->h;
  if (u->h.op == rdm::kRts) send_fin(ep, u->conn, u->h.id);
  report_rx(ep, r, u->conn, 0, 0, 0);
  delete u;
}

// FI_PEEK (with FI_CLAIM or FI_DISCARD) on the unexpected messages.
ssize_t peek(RdmEp* ep, const RecvArgs& a, RecvReq* probe) {
  auto& list = ep->unexp[a.tagged ? 1 : 0];
  probe->count = 0;  // a peek returns no data: its entry names no buffer
  for (auto it = list.begin(); it != list.end(); ++it) {
    Unexp* u = *it;
    if (u->claim != nullptr || !matches(ep, probe, u->conn, u->h)) continue;
    if ((a.flags & FI_DISCARD) != 0) {
      list.erase(it);
      discard(ep, probe, u);
      return 0;
    }
    probe->h = u->h;
    if ((a.flags & FI_CLAIM) != 0) u->claim = a.context;
    report_rx(ep, probe, u->conn, u->h.len, 0, 0);
    return 0;
  }
  report_rx(ep, probe, nullptr, 0, FI_ENOMSG, 0);
  return 0;
}

ssize_t recv_common(RdmEp* ep, const RecvArgs& a) {
  if (!ep->enabled) return -FI_EOPBADSTATE;
  if (a.count > rc::kMaxSge || (a.count > 0 && a.iov == nullptr)) return -FI_EINVAL;
  if ((a.flags & FI_MULTI_RECV) != 0) return -FI_EINVAL;
  dat::SpinLockGuard lk(ep->mu);
  RecvReq* r = new_req(ep);
  r->context = a.context;
  r->tagged = a.tagged;
  r->tag = a.tag;
  r->ignore = a.ignore;
  r->src = ep->directed ? a.src : FI_ADDR_UNSPEC;
  r->report = !ep->rx_selective || ((a.flags | ep->rx_op_flags) & FI_COMPLETION) != 0;
  r->count = a.count;
  for (size_t k = 0; k < a.count; ++k) {
    r->iov[k] = a.iov[k];
    r->desc[k] = a.desc != nullptr ? a.desc[k] : nullptr;
    r->total += a.iov[k].iov_len;
  }
  // The buffers are checked now (a bad descriptor fails the post).
  rc::Sge sge[rc::kMaxSge];
  uint64_t total = 0;
  if (int e = iov_sges(ep->dom, r->iov, r->desc, r->count, sge, &total, true); e != 0) {
    free_req(ep, r);
    return e;
  }
  auto& list = ep->unexp[a.tagged ? 1 : 0];
  if ((a.flags & FI_PEEK) != 0) {
    rdm_progress(ep);  // a peek looks at what has arrived by now
    r->report = true;
    const ssize_t ret = peek(ep, a, r);
    free_req(ep, r);
    return ret;
  }
  if ((a.flags & FI_CLAIM) != 0) {
    // The message an earlier FI_PEEK | FI_CLAIM with this context claimed.
    for (auto it = list.begin(); it != list.end(); ++it) {
      Unexp* u = *it;
      if (u->claim != a.context) continue;
      list.erase(it);
      if ((a.flags & FI_DISCARD) != 0) {
        discard(ep, r, u);
        free_req(ep, r);
        return 0;
      }
      take_unexp(ep, r, u);
      return 0;
    }
    free_req(ep, r);
    return -FI_EINVAL;
  }
  for (auto it = list.begin(); it != list.end(); ++it) {
    Unexp* u = *it;
    if (u->claim != nullptr || !matches(ep, r, u->conn, u->h)) continue;
    list.erase(it);
    take_unexp(ep, r, u);
    return 0;
  }
  ep->posted[a.tagged ? 1 : 0].push_back(r);
  return 0;
}

// ------------------------------------------------------------ fi_ops_msg

ssize_t m_recv(fid_ep* e, void* buf, size_t len, void* desc, fi_addr_t src, void* context) {
  iovec iov{buf, len};
  RecvArgs a{&iov, &desc, 1, src, 0, 0, context, rdm_cast(e)->rx_op_flags, false};
  return recv_common(rdm_cast(e), a);
}
ssize_t m_recvv(fid_ep* e, const iovec* iov, void** desc, size_t count, fi_addr_t src,
                void* context) {
  RecvArgs a{iov, desc, count, src, 0, 0, context, rdm_cast(e)->rx_op_flags, false};
  return recv_common(rdm_cast(e), a);
}
ssize_t m_recvmsg(fid_ep* e, const fi_msg* m, uint64_t flags) {
  if (m == nullptr) return -FI_EINVAL;
  RecvArgs a{m->msg_iov, m->desc, m->iov_count, m->addr, 0, 0, m->context, flags, false};
  return recv_common(rdm_cast(e), a);
}
ssize_t m_send(fid_ep* e, const void* buf, size_t len, void* desc, fi_addr_t dest, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  SendArgs s{&iov, &desc, 1, dest, 0, 0, context, rdm_cast(e)->tx_op_flags, false, false};
  return send_common(rdm_cast(e), s);
}
ssize_t m_sendv(fid_ep* e, const iovec* iov, void** desc, size_t count, fi_addr_t dest,
                void* context) {
  SendArgs s{iov, desc, count, dest, 0, 0, context, rdm_cast(e)->tx_op_flags, false, false};
  return send_common(rdm_cast(e), s);
}
ssize_t m_sendmsg(fid_ep* e, const fi_msg* m, uint64_t flags) {
  if (m == nullptr) return -FI_EINVAL;
  SendArgs s{m->msg_iov, m->desc,    m->iov_count, m->addr, 0,
             m->data,    m->context, flags,        false,   false};
  return send_common(rdm_cast(e), s);
}
ssize_t m_inject(fid_ep* e, const void* buf, size_t len, fi_addr_t dest) {
  iovec iov{const_cast<void*>(buf), len};
  SendArgs s{&iov, nullptr, 1, dest, 0, 0, nullptr, FI_INJECT, false, true};
  return send_common(rdm_cast(e), s);
}
ssize_t m_senddata(fid_ep* e, const void* buf, size_t len, void* desc, uint64_t data,
                   fi_addr_t dest, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  SendArgs s{&iov,  &desc, 1, dest, 0, data, context, rdm_cast(e)->tx_op_flags | FI_REMOTE_CQ_DATA,
             false, false};
  return send_common(rdm_cast(e), s);
}
ssize_t m_injectdata(fid_ep* e, const void* buf, size_t len, uint64_t data, fi_addr_t dest) {
  iovec iov{const_cast<void*>(buf), len};
  SendArgs s{&iov, nullptr, 1, dest, 0, data, nullptr, FI_INJECT | FI_REMOTE_CQ_DATA, false, true};
  return send_common(rdm_cast(e), s);
}

// ------------------------------------------------------------ fi_ops_tagged

ssize_t t_recv(fid_ep* e, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t tag,
               uint64_t ignore, void* context) {
  iovec iov{buf, len};
  RecvArgs a{&iov, &desc, 1, src, tag, ignore, context, rdm_cast(e)->rx_op_flags, true};
  return recv_common(rdm_cast(e), a);
}
ssize_t t_recvv(fid_ep* e, const iovec* iov, void** desc, size_t count, fi_addr_t src, uint64_t tag,
                uint64_t ignore, void* context) {
  RecvArgs a{iov, desc, count, src, tag, ignore, context, rdm_cast(e)->rx_op_flags, true};
  return recv_common(rdm_cast(e), a);
}
ssize_t t_recvmsg(fid_ep* e, const fi_msg_tagged* m, uint64_t flags) {
  if (m == nullptr) return -FI_EINVAL;
  RecvArgs a{m->msg_iov, m->desc,    m->iov_count, m->addr, m->tag,
             m->ignore,  m->context, flags,        true};
  return recv_common(rdm_cast(e), a);
}
ssize_t t_send(fid_ep* e, const void* buf, size_t len, void* desc, fi_addr_t dest, uint64_t tag,
               void* context) {
  iovec iov{const_cast<void*>(buf), len};
  SendArgs s{&iov, &desc, 1, dest, tag, 0, context, rdm_cast(e)->tx_op_flags, true, false};
  return send_common(rdm_cast(e), s);
}
ssize_t t_sendv(fid_ep* e, const iovec* iov, void** desc, size_t count, fi_addr_t dest,
                uint64_t tag, void* context) {
  SendArgs s{iov, desc, count, dest, tag, 0, context, rdm_cast(e)->tx_op_flags, true, false};
  return send_common(rdm_cast(e), s);
}
ssize_t t_sendmsg(fid_ep* e, const fi_msg_tagged* m, uint64_t flags) {
  if (m == nullptr) return -FI_EINVAL;
  SendArgs s{m->msg_iov, m->desc,    m->iov_count, m->addr, m->tag,
             m->data,    m->context, flags,        true,    false};
  return send_common(rdm_cast(e), s);
}
ssize_t t_inject(fid_ep* e, const void* buf, size_t len, fi_addr_t dest, uint64_t tag) {
  iovec iov{const_cast<void*>(buf), len};
  SendArgs s{&iov, nullptr, 1, dest, tag, 0, nullptr, FI_INJECT, true, true};
  return send_common(rdm_cast(e), s);
}
ssize_t t_senddata(fid_ep* e, const void* buf, size_t len, void* desc, uint64_t data,
                   fi_addr_t dest, uint64_t tag, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  SendArgs s{&iov, &desc, 1, dest, tag, data, context, rdm_cast(e)->tx_op_flags | FI_REMOTE_CQ_DATA,
             true, false};
  return send_common(rdm_cast(e), s);
}
ssize_t t_injectdata(fid_ep* e, const void* buf, size_t len, uint64_t data, fi_addr_t dest,
                     uint64_t tag) {
  iovec iov{const_cast<void*>(buf), len};
  SendArgs s{&iov, nullptr, 1, dest, tag, data, nullptr, FI_INJECT | FI_REMOTE_CQ_DATA, true, true};
  return send_common(rdm_cast(e), s);
}

}  // namespace

fi_ops_msg g_rdm_msg_ops = {sizeof(fi_ops_msg), m_recv,   m_recvv,    m_recvmsg,   m_send, m_sendv,
                            m_sendmsg,          m_inject, m_senddata, m_injectdata};
fi_ops_tagged g_rdm_tagged_ops = {sizeof(fi_ops_tagged),
                                  t_recv,
                                  t_recvv,
                                  t_recvmsg,
                                  t_send,
                                  t_sendv,
                                  t_sendmsg,
                                  t_inject,
                                  t_senddata,
                                  t_injectdata};

void rdm_on_recv(RdmEp* ep, Conn* c, uint32_t i, const dat::Event& ev) {
  if (i >= rdm::kRxBufs) return;
  if (ev.status != dat::DtoStatus::kSuccess) {
    // Flushed by a connection that went down: the buffer stays the SRQ's.
    if (ev.status != dat::DtoStatus::kFlushed)
      FI_WARN(&g_prov, FI_LOG_EP_DATA, "receive failed (status %u)\n",
              static_cast<unsigned>(ev.status));
    rdm_repost(ep, i);
    return;
  }
  const uint8_t* b = rxbuf(ep, i);
  rdm::Hdr h;
  if (c == nullptr || ev.length < sizeof(h)) {
    FI_WARN(&g_prov, FI_LOG_EP_DATA, "a message of %llu bytes without a header: dropped\n",
            static_cast<unsigned long long>(ev.length));
    rdm_repost(ep, i);
    return;
  }
  std::memcpy(&h, b, sizeof(h));
  switch (h.op) {
    case rdm::kEager: {
      const uint64_t len = ev.length - sizeof(h);
      if (len != h.len) {
        FI_WARN(&g_prov, FI_LOG_EP_DATA, "eager message of %llu bytes says %llu: dropped\n",
                static_cast<unsigned long long>(len), static_cast<unsigned long long>(h.len));
        break;
      }
      arrive(ep, c, h, b + sizeof(h), len, 0, 0);
      break;
    }
    case rdm::kRts: {
      rdm::Rts rts;
      if (ev.length < sizeof(rts)) break;
      std::memcpy(&rts, b, sizeof(rts));
      arrive(ep, c, rts.h, nullptr, 0, rts.va, rts.rkey);
      break;
    }
    case rdm::kFin: {
      const auto idx = static_cast<uint32_t>(h.id);
      if (idx >= ep->tx.size()) break;
      TxOp& t = ep->tx[idx];
      if (!t.busy || t.kind != rdm::kRts || t.gen != static_cast<uint32_t>(h.id >> 32)) break;
      t.fin_done = true;
      t.fin_failed = (h.flags & rdm::kFinFailed) != 0;
      if (t.send_done) {
        report_tx(ep, t, t.fin_failed ? FI_EIO : 0);
        free_tx(ep, idx);
      }
      break;
    }
    default:
      FI_WARN(&g_prov, FI_LOG_EP_DATA, "message of unknown kind %u dropped\n", unsigned{h.op});
      break;
  }
  rdm_repost(ep, i);
}

void rdm_on_send_done(RdmEp* ep, uint32_t i, const dat::Event& ev) {
  if (i >= ep->tx.size() || !ep->tx[i].busy) return;
  TxOp& t = ep->tx[i];
  t.send_done = true;
  if (ev.status != dat::DtoStatus::kSuccess) {
    if (t.kind != rdm::kFin) report_tx(ep, t, dto_errno(ev.status, rc::WcOp::kSend));
    free_tx(ep, i);
    return;
  }
  if (t.kind == rdm::kRts && !t.fin_done) return;  // its FIN completes it
  if (t.kind != rdm::kFin) report_tx(ep, t, t.fin_failed ? FI_EIO : 0);
  free_tx(ep, i);
}

void rdm_on_read_done(RdmEp* ep, RecvReq* r, const dat::Event& ev) {
  if (ep->reading.erase(r) == 0) return;  // not one of this endpoint's
  Conn* c = r->conn;
  const uint64_t id = r->h.id;
  const bool failed = ev.status != dat::DtoStatus::kSuccess;
  if (failed) {
    count_rx(ep, FI_EIO);
    report_rx(ep, r, c, 0, dto_errno(ev.status, rc::WcOp::kRead), r->h.len);
  } else {
    const uint64_t cut = r->h.len - r->taken;
    count_rx(ep, cut > 0 ? FI_ETRUNC : 0);
    report_rx(ep, r, c, r->taken, cut > 0 ? FI_ETRUNC : 0, cut);
  }
  free_req(ep, r);
  send_fin(ep, c, id, failed);
}

void rdm_retry(RdmEp* ep) {
  for (size_t n = ep->fins.size(); n > 0 && !ep->tx_free.empty(); --n) {
    const RdmEp::PendingFin f = ep->fins.front();
    ep->fins.pop_front();
    send_fin(ep, f.conn, f.id, f.failed);
  }
  for (size_t n = ep->reads.size(); n > 0; --n) {
    RecvReq* r = ep->reads.front();
    ep->reads.pop_front();
    start_read(ep, r, r->conn, r->h, r->va, r->rkey);
  }
}

void rdm_conn_failed(RdmEp* ep, Conn* c) {
  for (uint32_t i = 0; i < ep->tx.size(); ++i) {
    TxOp& t = ep->tx[i];
    if (t.busy && t.conn == c && t.kind == rdm::kRts && t.send_done && !t.fin_done) {
      report_tx(ep, t, FI_EIO);
      free_tx(ep, i);
    }
  }
  std::erase_if(ep->fins, [c](const RdmEp::PendingFin& f) { return f.conn == c; });
}

void rdm_release(RdmEp* ep) {
  for (auto& list : ep->posted) {
    for (RecvReq* r : list) delete r;
    list.clear();
  }
  for (auto& list : ep->unexp) {
    for (Unexp* u : list) delete u;
    list.clear();
  }
  for (RecvReq* r : ep->req_pool) delete r;
  ep->req_pool.clear();
  for (RecvReq* r : ep->reads) delete r;
  for (RecvReq* r : ep->reading) delete r;
  ep->reading.clear();
  ep->reads.clear();
  ep->fins.clear();
  for (uint32_t i = 0; i < ep->tx.size(); ++i)
    if (ep->tx[i].busy) free_tx(ep, i);
}

ssize_t rdm_cancel(fid_t f, void* context) {
  auto* ep = reinterpret_cast<RdmEp*>(f);
  dat::SpinLockGuard lk(ep->mu);
  for (auto& list : ep->posted) {
    for (auto it = list.begin(); it != list.end(); ++it) {
      RecvReq* r = *it;
      if (r->context != context) continue;
      list.erase(it);
      report_rx(ep, r, nullptr, 0, FI_ECANCELED, 0);
      free_req(ep, r);
      return 0;
    }
  }
  return -FI_ENOENT;
}

}  // namespace dpdat::ofi
