// Shared receive contexts (fi_srx_context) over DAT shared receive queues.
//
// The context is a DAT SRQ of the domain's PZ.  An endpoint opened with
// ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT and bound to it is created on the
// SRQ at fi_enable; the receives posted to the context go to whichever of
// its endpoints a message arrives on first, and complete on that
// endpoint's receive CQ (its op_context the receive's, as usual).

#include "objects.hpp"

namespace dpdat::ofi {

namespace {

Srx* srx_cast(fid_ep* e) { return reinterpret_cast<Srx*>(e); }

ssize_t srx_recvv(fid_ep* e, const iovec* iov, void** desc, size_t count, fi_addr_t,
                  void* context) {
  Srx* s = srx_cast(e);
  if (count > rc::kMaxSge || (count > 0 && iov == nullptr)) return -FI_EINVAL;
  rc::Sge sge[rc::kMaxSge];
  uint64_t total = 0;
  if (int r = iov_sges(s->dom, iov, desc, count, sge, &total, /*recv=*/true); r != 0) return r;
  return to_fi(dat::srq_post_recv(s->srq, sge, static_cast<uint32_t>(count),
                                  reinterpret_cast<uintptr_t>(context)));
}

ssize_t srx_recv(fid_ep* e, void* buf, size_t len, void* desc, fi_addr_t src, void* context) {
  iovec iov{buf, len};
  return srx_recvv(e, &iov, &desc, 1, src, context);
}

ssize_t srx_recvmsg(fid_ep* e, const fi_msg* m, uint64_t flags) {
  if (m == nullptr) return -FI_EINVAL;
  // A shared queue hands each receive to one endpoint whole: no
  // multi-receive buffers there.
  if ((flags & FI_MULTI_RECV) != 0) return -FI_EBADFLAGS;
  return srx_recvv(e, m->msg_iov, m->desc, m->iov_count, m->addr, m->context);
}

ssize_t no_send(fid_ep*, const void*, size_t, void*, fi_addr_t, void*) { return -FI_ENOSYS; }
ssize_t no_sendv(fid_ep*, const iovec*, void**, size_t, fi_addr_t, void*) { return -FI_ENOSYS; }
ssize_t no_sendmsg(fid_ep*, const fi_msg*, uint64_t) { return -FI_ENOSYS; }
ssize_t no_inject(fid_ep*, const void*, size_t, fi_addr_t) { return -FI_ENOSYS; }
ssize_t no_senddata(fid_ep*, const void*, size_t, void*, uint64_t, fi_addr_t, void*) {
  return -FI_ENOSYS;
}
ssize_t no_injectdata(fid_ep*, const void*, size_t, uint64_t, fi_addr_t) { return -FI_ENOSYS; }

ssize_t srx_cancel(fid_t, void*) { return -FI_ENOSYS; }
int srx_getopt(fid_t, int, int, void*, size_t*) { return -FI_ENOPROTOOPT; }
int srx_setopt(fid_t, int, int, const void*, size_t) { return -FI_ENOPROTOOPT; }
int srx_tx_ctx(fid_ep*, int, fi_tx_attr*, fid_ep**, void*) { return -FI_ENOSYS; }
int srx_rx_ctx(fid_ep*, int, fi_rx_attr*, fid_ep**, void*) { return -FI_ENOSYS; }
ssize_t srx_size_left(fid_ep*) { return -FI_ENOSYS; }

int srx_close(fid* f) {
  auto* s = reinterpret_cast<Srx*>(f);
  if (s->refs > 0) return -FI_EBUSY;
  if (dat::Status st = dat::srq_free(s->srq); !st.ok()) return to_fi(st);
  s->dom->refs--;
  delete s;
  return 0;
}

int srx_control(fid* f, int command, void* arg) {
  auto* s = reinterpret_cast<Srx*>(f);
  if (command != FI_GETOPSFLAG && command != FI_SETOPSFLAG) return -FI_ENOSYS;
  if (arg == nullptr) return -FI_EINVAL;
  auto* fl = static_cast<uint64_t*>(arg);
  if ((*fl & FI_TRANSMIT) != 0) return -FI_EINVAL;  // a receive context
  if (command == FI_GETOPSFLAG) {
    *fl = s->op_flags | FI_RECV;
  } else {
    s->op_flags = *fl & ~static_cast<uint64_t>(FI_RECV);
  }
  return 0;
}

fi_ops g_srx_fi_ops = {sizeof(fi_ops), srx_close, no_bind,   srx_control,
                       no_ops_open,    no_tostr,  no_ops_set};
fi_ops_ep g_srx_ep_ops = {sizeof(fi_ops_ep), srx_cancel, srx_getopt,    srx_setopt,
                          srx_tx_ctx,        srx_rx_ctx, srx_size_left, srx_size_left};
fi_ops_msg g_srx_msg_ops = {sizeof(fi_ops_msg), srx_recv,   srx_recvv, srx_recvmsg, no_send,
                            no_sendv,           no_sendmsg, no_inject, no_senddata, no_injectdata};

}  // namespace

int srx_open(fid_domain* domain, fi_rx_attr* attr, fid_ep** out, void* context) {
  auto* d = object_of<Domain>(&domain->fid, FI_CLASS_DOMAIN);
  if (d == nullptr || out == nullptr) return -FI_EINVAL;
  size_t size = kRxSize;
  if (attr != nullptr) {
    if ((attr->caps & FI_MULTI_RECV) != 0 || (attr->op_flags & FI_MULTI_RECV) != 0)
      return -FI_EINVAL;  // see srx_recvmsg
    if (attr->iov_limit > rc::kMaxSge || attr->total_buffered_recv > 0) return -FI_EINVAL;
    if (attr->size > 0) size = attr->size;
  }
  dat::Ia* ia = d->pz->ia;
  if (size > ia->iface->limits.max_recv_per_srq) return -FI_EINVAL;
  auto* s = new Srx();
  s->dom = d;
  s->op_flags = attr != nullptr ? attr->op_flags : 0;
  if (dat::Status st =
          dat::srq_create(ia, d->pz, static_cast<uint32_t>(size), rc::kMaxSge, 0, &s->srq);
      !st.ok()) {
    delete s;
    return to_fi(st);
  }
  s->ep.fid.fclass = FI_CLASS_SRX_CTX;
  s->ep.fid.context = context;
  s->ep.fid.ops = &g_srx_fi_ops;
  s->ep.ops = &g_srx_ep_ops;
  s->ep.msg = &g_srx_msg_ops;
  d->refs++;
  *out = &s->ep;
  return 0;
}

}  // namespace dpdat::ofi
