// LMR and RMR operations (an RMR bind is posted on an EP's send queue).

#include "ops.hpp"

#include <memory>

namespace dpdat::dat {

Status free_lmr(Lmr* l) {
  if (l->children > 0) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_LMR_IN_USE);
  Iface* f = l->ia->iface;
  bool in_use = false;
  const auto e = f->mr->mr_free(l->lmr_context, &in_use);
  if (in_use) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_LMR_IN_USE);
  if (e != rc::AccessError::kOk) return fail(Type::INTERNAL_ERROR);
  f->lmr_by_ctx.erase(l->lmr_context);
  if (l->parent != nullptr) l->parent->children--;
  l->pz->refs--;
  destroy(l);
  return kOk;
}

void free_rmr(Rmr* r) {
  r->ia->iface->mr->mw_free(r->slot);
  r->pz->refs--;
  destroy(r);
}

namespace {

// A registered LMR joins its PZ, the interface's map by context and its IA.
Lmr* install_lmr(Iface* f, std::unique_ptr<Lmr> l) {
  l->pz->refs++;
  f->lmr_by_ctx[l->lmr_context] = l.get();
  Lmr* raw = l.release();
  adopt(raw->ia, raw);
  return raw;
}

}  // namespace

Status lmr_create(Ia* ia, Pz* pz, const LmrSpec& spec, uint32_t privileges, Lmr** out) {
  Iface* f = ia->iface;
  Lock lk(f);
  auto l = std::make_unique<Lmr>(ia);
  l->pz = pz;
  l->privileges = privileges;
  l->mem_type = spec.type;
  l->host = spec.host;
  l->va = spec.va;
  l->length = spec.length;
  if (spec.type == MemType::kLmr) {
    l->parent = spec.parent;
    l->host = spec.parent->host;
    l->va = spec.parent->va;
    l->length = spec.parent->length;
  }
  if (spec.type == MemType::kSharedVirtual && spec.cookie != nullptr)
    // The 40-byte cookie is opaque binary: copied and compared byte for byte.
    std::memcpy(l->cookie.data(), spec.cookie, kCookieSize);
  if (l->length > f->limits.max_lmr_size) return fail(Type::LENGTH_ERROR);
  // A region whose end does not fit in 64 bits is a bad address, not a lack
  // of resources (the memory table refuses it as well).
  if (l->length != 0 && l->va + l->length < l->va)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  // Local read access is always granted, as InfiniBand verbs do (OFED's
  // dtest sends from an LMR registered with DAT_MEM_PRIV_LOCAL_WRITE_FLAG
  // only); the LMR still reports the privileges the consumer asked for.
  if (!f->mr->mr_register(pz->id, l->host, l->va, l->length, privileges | rc::priv::kLocalRead,
                          &l->lmr_context))
    return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_MEMORY_REGION);
  if ((privileges & (rc::priv::kRemoteRead | rc::priv::kRemoteWrite | rc::priv::kRemoteAtomic)) !=
      0)
    l->rmr_context = l->lmr_context;  // the LMR's own key doubles as its remote key
  if (l->parent != nullptr) l->parent->children++;
  *out = install_lmr(f, std::move(l));
  return kOk;
}

Status lmr_create_local_only(Ia* ia, Pz* pz, Lmr** out) {
  Iface* f = ia->iface;
  Lock lk(f);
  auto l = std::make_unique<Lmr>(ia);
  l->pz = pz;
  l->privileges = rc::priv::kLocalRead | rc::priv::kLocalWrite;
  l->mem_type = MemType::kVirtual;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the host address of va, by construction
  l->host = reinterpret_cast<uint8_t*>(kLocalOnlyBase);
  l->va = kLocalOnlyBase;
  l->length = kLocalOnlyEnd - kLocalOnlyBase;
  if (!f->mr->mr_register_local_only(pz->id, l->host, l->va, l->length, &l->lmr_context))
    return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_MEMORY_REGION);
  *out = install_lmr(f, std::move(l));
  return kOk;
}

Status lmr_free(Lmr* l) {
  Lock lk(l->ia->iface);
  return free_lmr(l);
}

Status lmr_set_rma_counters(Lmr* l, std::atomic<uint64_t>* writes, std::atomic<uint64_t>* reads) {
  Lock lk(l->ia->iface);
  if (!l->ia->iface->mr->mr_set_rma_counters(l->lmr_context, writes, reads))
    return fail(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_LMR);
  return kOk;
}

Status lmr_sync(Ia* ia, uint64_t n, const std::function<rc::Sge(uint64_t)>& seg) {
  Lock lk(ia->iface);
  for (uint64_t i = 0; i < n; ++i) {
    const rc::Sge g = seg(i);
    rc::MrInfo l;
    if (!ia->iface->mr->mr_query(g.lkey, &l))
      return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
    const uint64_t va = g.va, len = g.length;
    if (va < l.va || len > l.length || va - l.va > l.length - len)
      return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  }
  // x86 is cache coherent for DMA-less software RDMA: a full fence orders the
  // consumer's stores before the engine's later loads (and vice versa).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return kOk;
}

Status rmr_create(Pz* pz, Rmr** out) {
  Iface* f = pz->ia->iface;
  Lock lk(f);
  auto* r = new Rmr(pz->ia);
  r->pz = pz;
  if (!f->mr->mw_alloc(pz->id, &r->slot)) {
    delete r;
    return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_MEMORY_REGION);
  }
  pz->refs++;
  adopt(pz->ia, r);
  *out = r;
  return kOk;
}

Status rmr_bind(Rmr* r, Ep* ep, uint32_t lmr_context, uint64_t va, uint64_t length,
                uint32_t privileges, uint64_t cookie, uint32_t cflags, uint32_t* ctx_out) {
  Iface* f = r->ia->iface;
  Lock lk(f);
  if (ep->state != EpState::kConnected || ep->qp == nullptr)
    return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
  if (ep->pz != r->pz) return fail(Type::PROTECTION_VIOLATION);
  Lmr* lmr = nullptr;
  if (length > 0) {
    auto it = f->lmr_by_ctx.find(lmr_context);
    if (it == f->lmr_by_ctx.end()) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
    lmr = it->second;
    const auto be = f->mr->check_bind(r->slot, lmr_context, va, length, privileges, ep->pz->id,
                                      rc::qp::number(*ep->qp));
    switch (be) {
      case rc::BindError::kOk:
        break;
      case rc::BindError::kPzMismatch:
        return fail(Type::PROTECTION_VIOLATION);
      case rc::BindError::kPrivilegeNotCovered:
        return fail(Type::PRIVILEGES_VIOLATION);
      case rc::BindError::kOutOfBounds:
        return fail(Type::LENGTH_ERROR);
      case rc::BindError::kMwBusy:
        return fail(Type::INVALID_STATE);
      default:
        return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
    }
  }
  if (!r->binds.empty() && r->bind_qpn != rc::qp::number(*ep->qp)) return fail(Type::INVALID_STATE);
  uint32_t wr_flags = 0;
  Status st = request_flags(ep, cflags, &wr_flags);
  if (!st.ok()) return st;
  rc::SendWr wr;
  wr.cookie = reinterpret_cast<uintptr_t>(r);
  wr.op = rc::WrOp::kBind;
  wr.flags = wr_flags & ~rc::wr_flag::kSolicited;
  wr.mw_handle = r->slot;
  wr.bind_lkey = lmr_context;
  wr.bind_va = va;
  wr.bind_len = length;
  wr.bind_privileges = privileges;
  const uint32_t ctx = f->mr->mw_predict_rkey(r->slot, static_cast<uint32_t>(r->binds.size()));
  const auto pr = f->post_send_now(ep, wr);
  if (pr != rc::PostResult::kOk) return post_result(pr, ep);
  r->binds.push_back(Rmr::PendingBind{cookie, lmr, va, length, privileges});
  r->bind_qpn = rc::qp::number(*ep->qp);
  r->context = ctx;
  *ctx_out = ctx;
  f->progress(now_ns(), true);
  return kOk;
}

Status rmr_free(Rmr* r) {
  Lock lk(r->ia->iface);
  if (!r->binds.empty()) return fail(Type::INVALID_STATE);
  free_rmr(r);
  return kOk;
}

}  // namespace dpdat::dat
