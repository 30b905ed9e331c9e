// The domain (a PZ on the fabric's IA) and memory registration (LMRs).

#include <cstring>

#include "rdm.hpp"

namespace dpdat::ofi {

namespace {

int domain_close(fid* f) {
  auto* d = reinterpret_cast<Domain*>(f);
  if (d->refs > 0) return -FI_EBUSY;
  if (d->any_lmr != nullptr) {
    if (dat::Status st = dat::lmr_free(d->any_lmr); !st.ok()) return to_fi(st);
    d->any_lmr = nullptr;
  }
  if (d->pz != nullptr && !dat::pz_free(d->pz).ok()) return -FI_EBUSY;
  {
    std::lock_guard lk(d->fab->mu);
    d->fab->refs--;
  }
  delete d;
  return 0;
}

int domain_scalable_ep(fid_domain*, fi_info*, fid_ep**, void*) { return -FI_ENOSYS; }
int domain_stx_ctx(fid_domain*, fi_tx_attr*, fid_stx**, void*) { return -FI_ENOSYS; }
int domain_query_collective(fid_domain*, fi_collective_op, fi_collective_attr*, uint64_t) {
  return -FI_ENOSYS;
}
int domain_endpoint2(fid_domain* domain, fi_info* info, fid_ep** ep, uint64_t flags,
                     void* context) {
  if (flags != 0) return -FI_EINVAL;
  return ep_open(domain, info, ep, context);
}

fi_ops g_domain_fi_ops = {sizeof(fi_ops), domain_close, no_bind,   no_control,
                          no_ops_open,    no_tostr,     no_ops_set};
fi_ops_domain g_domain_ops = {sizeof(fi_ops_domain),
                              av_open,
                              cq_open,
                              ep_open,
                              domain_scalable_ep,
                              cntr_open,
                              poll_open,
                              domain_stx_ctx,
                              srx_open,
                              query_atomic,
                              domain_query_collective,
                              domain_endpoint2};
fi_ops_mr g_mr_ops = {sizeof(fi_ops_mr), mr_reg, mr_regv, mr_regattr};

int mr_close(fid* f) {
  auto* m = reinterpret_cast<Mr*>(f);
  dat::Status st = dat::lmr_free(m->lmr);
  if (!st.ok()) return to_fi(st);
  for (Cntr* c : {m->cntr_rem_write, m->cntr_rem_read})
    if (c != nullptr) c->refs--;
  m->dom->refs--;
  delete m;
  return 0;
}

// A counter of the remote WRITEs (FI_REMOTE_WRITE) into or READs
// (FI_REMOTE_READ) out of the region, counted by the responder of whichever
// endpoint serves them, as an endpoint's are (ep_bind).  Atomics are not
// counted.  No FD counters: nothing writes their descriptor.
int mr_bind(fid* f, fid* bf, uint64_t flags) {
  auto* m = reinterpret_cast<Mr*>(f);
  Cntr* c = object_of<Cntr>(bf, FI_CLASS_CNTR);
  if (c == nullptr) return -FI_EINVAL;  // no FI_MR_ENDPOINT: regions bind to nothing else
  if ((flags & ~static_cast<uint64_t>(FI_REMOTE_WRITE | FI_REMOTE_READ)) != 0) return -FI_EBADFLAGS;
  if (flags == 0 || c->dom->pz->ia->iface != m->dom->pz->ia->iface) return -FI_EINVAL;
  if (c->wait.fd >= 0) return -FI_ENOSYS;
  Cntr* w = (flags & FI_REMOTE_WRITE) != 0 ? c : m->cntr_rem_write;
  Cntr* r = (flags & FI_REMOTE_READ) != 0 ? c : m->cntr_rem_read;
  dat::Status st = dat::lmr_set_rma_counters(m->lmr, w != nullptr ? &w->value : nullptr,
                                             r != nullptr ? &r->value : nullptr);
  if (!st.ok()) return to_fi(st);
  for (Cntr** slot : {&m->cntr_rem_write, &m->cntr_rem_read}) {
    Cntr* now = slot == &m->cntr_rem_write ? w : r;
    if (*slot == now) continue;
    if (*slot != nullptr) (*slot)->refs--;
    now->refs++;
    *slot = now;
  }
  return 0;
}

fi_ops g_mr_fi_ops = {sizeof(fi_ops), mr_close, mr_bind,   no_control,
                      no_ops_open,    no_tostr, no_ops_set};

}  // namespace

int domain_open(fid_fabric* fabric, fi_info* info, fid_domain** dom, void* context) {
  auto* fab = object_of<Fabric>(&fabric->fid, FI_CLASS_FABRIC);
  if (fab == nullptr || info == nullptr || dom == nullptr) return -FI_EINVAL;
  dat::Ia* ia = nullptr;
  if (int r = fabric_ia(fab, info, &ia); r != 0) return r;
  auto* d = new Domain();
  if (dat::Status st = dat::pz_create(ia, &d->pz); !st.ok()) {
    delete d;
    return to_fi(st);
  }
  // Buffers without descriptors (no FI_MR_LOCAL) go through this key.
  if (dat::Status st = dat::lmr_create_local_only(ia, d->pz, &d->any_lmr); !st.ok()) {
    (void)dat::pz_free(d->pz);
    delete d;
    return to_fi(st);
  }
  d->fab = fab;
  d->mr_mode = info->domain_attr != nullptr ? static_cast<uint64_t>(info->domain_attr->mr_mode)
                                            : FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
  if (d->mr_mode == FI_MR_BASIC) d->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
  d->domain.fid.fclass = FI_CLASS_DOMAIN;
  d->domain.fid.context = context;
  d->domain.fid.ops = &g_domain_fi_ops;
  d->domain.ops = &g_domain_ops;
  d->domain.mr = &g_mr_ops;
  {
    std::lock_guard lk(fab->mu);
    fab->refs++;
  }
  *dom = &d->domain;
  return 0;
}

// FI_MR_PROV_KEY: the provider picks the key; a requested one is ignored.
int mr_reg(fid* fid, const void* buf, size_t len, uint64_t access, uint64_t offset,
           uint64_t /*requested_key*/, uint64_t flags, fid_mr** mr, void* context) {
  auto* d = object_of<Domain>(fid, FI_CLASS_DOMAIN);
  if (d == nullptr || mr == nullptr) return -FI_EINVAL;
  // The flags are hints: FI_RMA_EVENT (counters may be bound: mr_bind),
  // registration-cache ones (ofi_rxm passes OFI_MR_NOCACHE).
  (void)flags;
  if (buf == nullptr && len > 0) return -FI_EINVAL;
  if (access == 0)
    access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  uint32_t priv = rc::priv::kLocalRead | rc::priv::kLocalWrite;
  if ((access & FI_REMOTE_READ) != 0) priv |= rc::priv::kRemoteRead;
  if ((access & FI_REMOTE_WRITE) != 0) priv |= rc::priv::kRemoteWrite | rc::priv::kRemoteAtomic;
  dat::LmrSpec s;
  s.type = dat::MemType::kVirtual;
  s.host = static_cast<uint8_t*>(const_cast<void*>(buf));
  // Without FI_MR_VIRT_ADDR the peer names the bytes by offset (+ the
  // consumer's requested offset).
  s.va = (d->mr_mode & FI_MR_VIRT_ADDR) != 0 ? reinterpret_cast<uintptr_t>(buf) : offset;
  s.length = len;
  auto* m = new Mr();
  if (dat::Status st = dat::lmr_create(d->pz->ia, d->pz, s, priv, &m->lmr); !st.ok()) {
    delete m;
    return to_fi(st);
  }
  m->dom = d;
  m->base = reinterpret_cast<uintptr_t>(buf);
  m->mr.fid.fclass = FI_CLASS_MR;
  m->mr.fid.context = context;
  m->mr.fid.ops = &g_mr_fi_ops;
  m->mr.mem_desc = m;
  m->mr.key = m->lmr->lmr_context;
  d->refs++;
  *mr = &m->mr;
  return 0;
}

int mr_regv(fid* fid, const iovec* iov, size_t count, uint64_t access, uint64_t offset,
            uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context) {
  if (count != 1 || iov == nullptr) return -FI_EINVAL;  // mr_iov_limit 1
  return mr_reg(fid, iov[0].iov_base, iov[0].iov_len, access, offset, requested_key, flags, mr,
                context);
}

int mr_regattr(fid* fid, const fi_mr_attr* attr, uint64_t flags, fid_mr** mr) {
  if (attr == nullptr) return -FI_EINVAL;
  if (attr->iface != FI_HMEM_SYSTEM) return -FI_ENOSYS;
  return mr_regv(fid, attr->mr_iov, attr->iov_count, attr->access, attr->offset,
                 attr->requested_key, flags, mr, attr->context);
}

}  // namespace dpdat::ofi
