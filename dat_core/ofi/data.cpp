// Data transfers: messages, RMA and 8-byte atomics, each one ep_post /
// ep_post_recv on the EP's DAT EP.  Injected data is copied into one of the
// EP's slots (registered by the provider) and sent from there.

#include <cstring>

#include "objects.hpp"

namespace dpdat::ofi {

bool slot_of(Ep* ep, uint64_t cookie, Slot* out) {
  const auto base = reinterpret_cast<uintptr_t>(ep->bounce.data());
  if (ep->bounce.empty() || cookie < base || cookie >= base + ep->bounce.size()) return false;
  const uint64_t i = (cookie - base) / kInjectSize;
  dat::SpinLockGuard lk(ep->slot_mu);
  *out = ep->slots[i];
  ep->slots[i] = Slot{};
  // Its place in the ring: the first position from the tail on that uses
  // slot i (a stale completion, of a slot freed already, frees nothing).
  const uint64_t pos =
      ep->slot_tail + (i + kInjectSlots - ep->slot_tail % kInjectSlots) % kInjectSlots;
  if (pos < ep->slot_head) ep->slot_tail = pos + 1;
  return true;
}

int iov_sges(const Domain* d, const iovec* iov, void* const* desc, size_t count, rc::Sge* sge,
             uint64_t* total, bool recv) {
  *total = 0;
  for (size_t i = 0; i < count; ++i) {
    const Mr* m = desc != nullptr ? static_cast<const Mr*>(desc[i]) : nullptr;
    const auto addr = reinterpret_cast<uintptr_t>(iov[i].iov_base);
    const uint64_t len = iov[i].iov_len;
    if (m == nullptr) {
      // No descriptor (no FI_MR_LOCAL): the domain's local-only key names
      // the bytes by their address.  A source no process can map is
      // refused here; a receive buffer is judged for the bytes a message
      // writes into it (the engine's key check: a message that reaches
      // them completes in error, an empty one completes).  An address that
      // is merely not mapped now faults where the engine copies it, as the
      // consumer's own access would.
      if (!recv && len != 0 &&
          (addr < dat::kLocalOnlyBase || addr > dat::kLocalOnlyEnd ||
           len > dat::kLocalOnlyEnd - addr))
        return -FI_EINVAL;
      sge[i] = rc::Sge{d->any_lmr->lmr_context, addr, len};
      *total += len;
      continue;
    }
    // No object lives in the first page: such a value is no descriptor (a
    // consumer that passes fi_mr_desc() itself as the array gives the MR's
    // class number here).
    if (reinterpret_cast<uintptr_t>(m) < 4096 || m->mr.fid.fclass != FI_CLASS_MR) return -FI_EINVAL;
    sge[i].lkey = m->lmr->lmr_context;
    sge[i].va = addr - m->base + m->lmr->va;
    sge[i].length = len;
    *total += len;
  }
  return 0;
}

namespace {

struct Request {
  rc::WrOp op = rc::WrOp::kSend;
  const iovec* iov = nullptr;
  void* const* desc = nullptr;
  size_t count = 0;
  const dat::RemoteSeg* remote = nullptr;
  uint64_t data = 0;
  void* context = nullptr;
  uint64_t flags = 0;  // FI_COMPLETION, FI_INJECT, FI_FENCE, FI_REMOTE_CQ_DATA
  uint64_t compare = 0, swap_add = 0;
  bool silent = false;  // fi_inject*: never a completion
};

// The counter that counts a transfer of op, if any.
const Cntr* counter_of(const Ep* ep, rc::WrOp op) {
  switch (op) {
    case rc::WrOp::kSend:
    case rc::WrOp::kSendImm:
      return ep->cntr_send;
    case rc::WrOp::kWrite:
    case rc::WrOp::kWriteImm:
      return ep->cntr_write;
    case rc::WrOp::kRead:
    case rc::WrOp::kCompareSwap:
    case rc::WrOp::kFetchAdd:
      return ep->cntr_read;
    default:
      return nullptr;
  }
}

// Local segments of the consumer's buffers, with or without descriptors.
int to_sges(const Ep* ep, const Request& r, rc::Sge* sge, uint64_t* total, bool recv = false) {
  return iov_sges(ep->dom, r.iov, r.desc, r.count, sge, total, recv);
}

// Copies an inject request into the ring's next slot and posts it from
// there (slot_mu held: the ring's order is the queue pair's).
ssize_t post_slot(Ep* ep, const Request& r, dat::PostArgs* a, size_t total, bool report,
                  bool counted) {
  const uint64_t pos = ep->slot_head;
  const size_t i = pos % kInjectSlots;
  uint8_t* dst = ep->bounce.data() + i * kInjectSize;
  size_t off = 0;
  for (size_t k = 0; k < r.count; ++k) {
    if (r.iov[k].iov_len > 0) std::memcpy(dst + off, r.iov[k].iov_base, r.iov[k].iov_len);
    off += r.iov[k].iov_len;
  }
  rc::Sge sge{ep->bounce_lmr->lmr_context, reinterpret_cast<uintptr_t>(dst), total};
  a->sge = &sge;
  a->nsge = 1;
  a->cookie = reinterpret_cast<uintptr_t>(dst);
  if (!report && !counted && pos % kInjectSignalEvery != kInjectSignalEvery - 1)
    a->cflags |= dat::cflag::kSuppress;
  ep->slots[i] = Slot{report, r.context, r.flags, total};
  const int rc = to_fi(dat::ep_post(ep->dep, *a));
  if (rc == 0) {
    ep->slot_head = pos + 1;
  } else {
    ep->slots[i] = Slot{};
  }
  return rc;
}

ssize_t post(Ep* ep, const Request& r) {
  if (ep->dep == nullptr) return -FI_EOPBADSTATE;
  if (r.count > rc::kMaxSge || (r.count > 0 && r.iov == nullptr)) return -FI_EINVAL;
  if ((r.flags & FI_REMOTE_CQ_DATA) != 0 && (r.data >> 32) != 0) return -FI_EINVAL;
  dat::PostArgs a;
  a.op = r.op;
  a.remote = r.remote;
  a.imm = static_cast<uint32_t>(r.data);
  a.compare = r.compare;
  a.swap_add = r.swap_add;
  const bool want = !ep->tx_selective || ((r.flags | ep->tx_op_flags) & FI_COMPLETION) != 0;
  const Cntr* counter = counter_of(ep, r.op);
  if ((r.flags & FI_FENCE) != 0) a.cflags |= dat::cflag::kBarrierFence;
  rc::Sge sge[rc::kMaxSge];
  a.sge = sge;
  a.nsge = static_cast<uint32_t>(r.count);
  if ((r.flags & FI_INJECT) != 0) {
    size_t total = 0;
    for (size_t i = 0; i < r.count; ++i) total += r.iov[i].iov_len;
    if (total > kInjectSize) return -FI_EMSGSIZE;
    const bool report = want && !r.silent;
    for (int round = 0; round < 2; ++round) {
      {
        dat::SpinLockGuard lk(ep->slot_mu);
        if (ep->slot_head - ep->slot_tail < kInjectSlots)
          return post_slot(ep, r, &a, total, report, counter != nullptr);
      }
      // Every slot in flight: completions taken off the transmit CQ free some.
      if (round == 0 && !reclaim_slots(ep->txcq)) break;
    }
    return -FI_EAGAIN;
  }
  uint64_t total = 0;
  if (int e = to_sges(ep, r, sge, &total); e != 0) return e;
  a.cookie = reinterpret_cast<uintptr_t>(r.context);
  if (!want && counter != nullptr) {
    a.cookie = reinterpret_cast<uintptr_t>(&ep->no_report);  // counted, no CQ entry
  } else if (!want) {
    a.cflags |= dat::cflag::kSuppress;
  }
  return to_fi(dat::ep_post(ep->dep, a));
}

Ep* ep_cast(fid_ep* e) { return reinterpret_cast<Ep*>(e); }

// ------------------------------------------------------------ messages

// A receive; FI_MULTI_RECV (of the flags or the endpoint's receive
// operation flags) posts a buffer for several messages.
ssize_t recv_common(Ep* ep, const iovec* iov, void** desc, size_t count, void* context,
                    uint64_t flags) {
  if (ep->dep == nullptr) return -FI_EOPBADSTATE;
  if (count > rc::kMaxSge || (count > 0 && iov == nullptr)) return -FI_EINVAL;
  const bool multi = (flags & FI_MULTI_RECV) != 0;
  if (multi && ((ep->info->caps & FI_MULTI_RECV) == 0 || count == 0)) return -FI_EINVAL;
  Request r;
  r.iov = iov;
  r.desc = desc;
  r.count = count;
  rc::Sge sge[rc::kMaxSge];
  uint64_t total = 0;
  if (int rc = to_sges(ep, r, sge, &total, /*recv=*/true); rc != 0) return rc;
  if (multi) return multi_recv_post(ep, iov, sge, count, context);
  return to_fi(dat::ep_post_recv(ep->dep, sge, static_cast<uint32_t>(count),
                                 reinterpret_cast<uintptr_t>(context), 0));
}

ssize_t recvv(fid_ep* e, const iovec* iov, void** desc, size_t count, fi_addr_t, void* context) {
  Ep* ep = ep_cast(e);
  return recv_common(ep, iov, desc, count, context, ep->rx_op_flags);
}

ssize_t recv(fid_ep* e, void* buf, size_t len, void* desc, fi_addr_t src, void* context) {
  iovec iov{buf, len};
  return recvv(e, &iov, &desc, 1, src, context);
}

ssize_t recvmsg(fid_ep* e, const fi_msg* m, uint64_t flags) {
  if (m == nullptr) return -FI_EINVAL;
  return recv_common(ep_cast(e), m->msg_iov, m->desc, m->iov_count, m->context, flags);
}

ssize_t send_common(fid_ep* e, const fi_msg* m, uint64_t flags, bool silent) {
  if (m == nullptr) return -FI_EINVAL;
  Request r;
  r.op = (flags & FI_REMOTE_CQ_DATA) != 0 ? rc::WrOp::kSendImm : rc::WrOp::kSend;
  r.iov = m->msg_iov;
  r.desc = m->desc;
  r.count = m->iov_count;
  r.data = m->data;
  r.context = m->context;
  r.flags = flags;
  r.silent = silent;
  return post(ep_cast(e), r);
}

ssize_t sendmsg(fid_ep* e, const fi_msg* m, uint64_t flags) {
  return send_common(e, m, flags, false);
}

ssize_t sendv(fid_ep* e, const iovec* iov, void** desc, size_t count, fi_addr_t, void* context) {
  fi_msg m{iov, desc, count, 0, context, 0};
  return sendmsg(e, &m, ep_cast(e)->tx_op_flags);
}

ssize_t send(fid_ep* e, const void* buf, size_t len, void* desc, fi_addr_t dest, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  return sendv(e, &iov, &desc, 1, dest, context);
}

ssize_t senddata(fid_ep* e, const void* buf, size_t len, void* desc, uint64_t data, fi_addr_t,
                 void* context) {
  iovec iov{const_cast<void*>(buf), len};
  fi_msg m{&iov, &desc, 1, 0, context, data};
  return sendmsg(e, &m, ep_cast(e)->tx_op_flags | FI_REMOTE_CQ_DATA);
}

ssize_t inject(fid_ep* e, const void* buf, size_t len, fi_addr_t) {
  iovec iov{const_cast<void*>(buf), len};
  fi_msg m{&iov, nullptr, 1, 0, nullptr, 0};
  return send_common(e, &m, FI_INJECT, true);
}

ssize_t injectdata(fid_ep* e, const void* buf, size_t len, uint64_t data, fi_addr_t) {
  iovec iov{const_cast<void*>(buf), len};
  fi_msg m{&iov, nullptr, 1, 0, nullptr, data};
  return send_common(e, &m, FI_INJECT | FI_REMOTE_CQ_DATA, true);
}

// ------------------------------------------------------------ RMA

ssize_t rma(fid_ep* e, rc::WrOp op, const fi_msg_rma* m, uint64_t flags, bool silent = false) {
  if (m == nullptr || m->rma_iov_count != 1 || m->rma_iov == nullptr) return -FI_EINVAL;
  dat::RemoteSeg rs;
  rs.rkey = static_cast<uint32_t>(m->rma_iov[0].key);
  rs.va = m->rma_iov[0].addr;
  rs.length = m->rma_iov[0].len;
  if ((m->rma_iov[0].key >> 32) != 0) return -FI_EINVAL;
  Request r;
  r.op = op;
  if (op == rc::WrOp::kWrite && (flags & FI_REMOTE_CQ_DATA) != 0) r.op = rc::WrOp::kWriteImm;
  if (op == rc::WrOp::kRead && (flags & FI_INJECT) != 0) return -FI_EINVAL;
  r.iov = m->msg_iov;
  r.desc = m->desc;
  r.count = m->iov_count;
  r.remote = &rs;
  r.data = m->data;
  r.context = m->context;
  r.flags = flags;
  r.silent = silent;
  return post(ep_cast(e), r);
}

size_t iov_total(const iovec* iov, size_t n) {
  size_t t = 0;
  for (size_t i = 0; i < n; ++i) t += iov[i].iov_len;
  return t;
}

ssize_t readmsg(fid_ep* e, const fi_msg_rma* m, uint64_t flags) {
  return rma(e, rc::WrOp::kRead, m, flags);
}
ssize_t readv(fid_ep* e, const iovec* iov, void** desc, size_t count, fi_addr_t, uint64_t addr,
              uint64_t key, void* context) {
  fi_rma_iov ri{addr, count > 0 && iov != nullptr ? iov_total(iov, count) : 0, key};
  fi_msg_rma m{iov, desc, count, 0, &ri, 1, context, 0};
  return readmsg(e, &m, ep_cast(e)->tx_op_flags);
}
ssize_t read(fid_ep* e, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t addr,
             uint64_t key, void* context) {
  iovec iov{buf, len};
  return readv(e, &iov, &desc, 1, src, addr, key, context);
}
ssize_t writemsg(fid_ep* e, const fi_msg_rma* m, uint64_t flags) {
  return rma(e, rc::WrOp::kWrite, m, flags);
}
ssize_t writev(fid_ep* e, const iovec* iov, void** desc, size_t count, fi_addr_t, uint64_t addr,
               uint64_t key, void* context) {
  fi_rma_iov ri{addr, count > 0 && iov != nullptr ? iov_total(iov, count) : 0, key};
  fi_msg_rma m{iov, desc, count, 0, &ri, 1, context, 0};
  return writemsg(e, &m, ep_cast(e)->tx_op_flags);
}
ssize_t write(fid_ep* e, const void* buf, size_t len, void* desc, fi_addr_t dest, uint64_t addr,
              uint64_t key, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  return writev(e, &iov, &desc, 1, dest, addr, key, context);
}
ssize_t writedata(fid_ep* e, const void* buf, size_t len, void* desc, uint64_t data, fi_addr_t,
                  uint64_t addr, uint64_t key, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  fi_rma_iov ri{addr, len, key};
  fi_msg_rma m{&iov, &desc, 1, 0, &ri, 1, context, data};
  return writemsg(e, &m, ep_cast(e)->tx_op_flags | FI_REMOTE_CQ_DATA);
}
ssize_t inject_write(fid_ep* e, const void* buf, size_t len, fi_addr_t, uint64_t addr,
                     uint64_t key) {
  iovec iov{const_cast<void*>(buf), len};
  fi_rma_iov ri{addr, len, key};
  fi_msg_rma m{&iov, nullptr, 1, 0, &ri, 1, nullptr, 0};
  return rma(e, rc::WrOp::kWrite, &m, FI_INJECT, true);
}
ssize_t inject_writedata(fid_ep* e, const void* buf, size_t len, uint64_t data, fi_addr_t,
                         uint64_t addr, uint64_t key) {
  iovec iov{const_cast<void*>(buf), len};
  fi_rma_iov ri{addr, len, key};
  fi_msg_rma m{&iov, nullptr, 1, 0, &ri, 1, nullptr, data};
  return rma(e, rc::WrOp::kWrite, &m, FI_INJECT | FI_REMOTE_CQ_DATA, true);
}

// ------------------------------------------------------------ atomics

bool atomic_type_ok(fi_datatype dt) { return dt == FI_INT64 || dt == FI_UINT64; }

uint64_t load8(const void* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// One 8-byte FI_SUM or FI_CSWAP; `result` (with its descriptor) takes the
// old value; without one (fi_atomic) it lands in an inject slot.
ssize_t atomic_post(Ep* ep, const fi_msg_atomic* m, const fi_ioc* result, void** result_desc,
                    const fi_ioc* compare, uint64_t flags, bool silent = false) {
  if (m == nullptr || m->iov_count != 1 || m->rma_iov_count != 1 || m->msg_iov == nullptr ||
      m->rma_iov == nullptr || m->msg_iov[0].count != 1 || !atomic_type_ok(m->datatype))
    return -FI_EINVAL;
  if (m->op != FI_SUM && m->op != FI_CSWAP) return -FI_EOPNOTSUPP;
  if (m->op == FI_CSWAP && (compare == nullptr || compare->count != 1)) return -FI_EINVAL;
  if ((m->rma_iov[0].key >> 32) != 0) return -FI_EINVAL;
  dat::RemoteSeg rs;
  rs.rkey = static_cast<uint32_t>(m->rma_iov[0].key);
  rs.va = m->rma_iov[0].addr;
  rs.length = 8;
  Request r;
  r.op = m->op == FI_SUM ? rc::WrOp::kFetchAdd : rc::WrOp::kCompareSwap;
  r.remote = &rs;
  r.context = m->context;
  r.silent = silent;
  r.swap_add = load8(m->msg_iov[0].addr);
  if (compare != nullptr) r.compare = load8(compare->addr);
  uint64_t zero = 0;
  iovec iov{&zero, 8};
  void* desc = nullptr;
  r.iov = &iov;
  r.count = 1;
  if (result != nullptr) {
    if (result->count != 1 || result_desc == nullptr) return -FI_EINVAL;
    iov = iovec{result->addr, 8};
    desc = result_desc[0];
    r.desc = &desc;
    r.flags = flags & ~FI_INJECT;
  } else {
    // The old value is not wanted: it lands in an inject slot.
    r.flags = flags | FI_INJECT;
  }
  return post(ep, r);
}

ssize_t atomicmsg(fid_ep* e, const fi_msg_atomic* m, uint64_t flags) {
  if (m != nullptr && m->op == FI_CSWAP) return -FI_EINVAL;  // needs compare and result
  return atomic_post(ep_cast(e), m, nullptr, nullptr, nullptr, flags);
}
ssize_t inject_atomicmsg(fid_ep* e, const fi_msg_atomic* m) {
  if (m->op == FI_CSWAP) return -FI_EINVAL;
  return atomic_post(ep_cast(e), m, nullptr, nullptr, nullptr, FI_INJECT, true);
}
ssize_t atomicv(fid_ep* e, const fi_ioc* iov, void** desc, size_t count, fi_addr_t dest,
                uint64_t addr, uint64_t key, fi_datatype dt, fi_op op, void* context) {
  fi_rma_ioc ri{addr, 1, key};
  fi_msg_atomic m{iov, desc, count, dest, &ri, 1, dt, op, context, 0};
  return atomicmsg(e, &m, ep_cast(e)->tx_op_flags);
}
ssize_t atomic(fid_ep* e, const void* buf, size_t count, void* desc, fi_addr_t dest, uint64_t addr,
               uint64_t key, fi_datatype dt, fi_op op, void* context) {
  fi_ioc ioc{const_cast<void*>(buf), count};
  return atomicv(e, &ioc, &desc, 1, dest, addr, key, dt, op, context);
}
ssize_t inject_atomic(fid_ep* e, const void* buf, size_t count, fi_addr_t dest, uint64_t addr,
                      uint64_t key, fi_datatype dt, fi_op op) {
  fi_ioc ioc{const_cast<void*>(buf), count};
  fi_rma_ioc ri{addr, 1, key};
  fi_msg_atomic m{&ioc, nullptr, 1, dest, &ri, 1, dt, op, nullptr, 0};
  return inject_atomicmsg(e, &m);
}
ssize_t fetch_atomicmsg(fid_ep* e, const fi_msg_atomic* m, fi_ioc* result, void** result_desc,
                        size_t result_count, uint64_t flags) {
  if (m != nullptr && m->op == FI_CSWAP) return -FI_EINVAL;
  if (result_count != 1) return -FI_EINVAL;
  return atomic_post(ep_cast(e), m, result, result_desc, nullptr, flags);
}
ssize_t fetch_atomicv(fid_ep* e, const fi_ioc* iov, void** desc, size_t count, fi_ioc* result,
                      void** result_desc, size_t result_count, fi_addr_t dest, uint64_t addr,
                      uint64_t key, fi_datatype dt, fi_op op, void* context) {
  fi_rma_ioc ri{addr, 1, key};
  fi_msg_atomic m{iov, desc, count, dest, &ri, 1, dt, op, context, 0};
  return fetch_atomicmsg(e, &m, result, result_desc, result_count, ep_cast(e)->tx_op_flags);
}
ssize_t fetch_atomic(fid_ep* e, const void* buf, size_t count, void* desc, void* result,
                     void* result_desc, fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt,
                     fi_op op, void* context) {
  fi_ioc ioc{const_cast<void*>(buf), count};
  fi_ioc res{result, count};
  return fetch_atomicv(e, &ioc, &desc, 1, &res, &result_desc, 1, dest, addr, key, dt, op, context);
}
ssize_t compare_atomicmsg(fid_ep* e, const fi_msg_atomic* m, const fi_ioc* comparev, void**,
                          size_t compare_count, fi_ioc* resultv, void** result_desc,
                          size_t result_count, uint64_t flags) {
  if (m == nullptr || m->op != FI_CSWAP) return -FI_EOPNOTSUPP;
  if (compare_count != 1 || result_count != 1) return -FI_EINVAL;
  return atomic_post(ep_cast(e), m, resultv, result_desc, comparev, flags);
}
ssize_t compare_atomicv(fid_ep* e, const fi_ioc* iov, void** desc, size_t count,
                        const fi_ioc* comparev, void** compare_desc, size_t compare_count,
                        fi_ioc* resultv, void** result_desc, size_t result_count, fi_addr_t dest,
                        uint64_t addr, uint64_t key, fi_datatype dt, fi_op op, void* context) {
  fi_rma_ioc ri{addr, 1, key};
  fi_msg_atomic m{iov, desc, count, dest, &ri, 1, dt, op, context, 0};
  return compare_atomicmsg(e, &m, comparev, compare_desc, compare_count, resultv, result_desc,
                           result_count, ep_cast(e)->tx_op_flags);
}
ssize_t compare_atomic(fid_ep* e, const void* buf, size_t count, void* desc, const void* compare,
                       void* compare_desc, void* result, void* result_desc, fi_addr_t dest,
                       uint64_t addr, uint64_t key, fi_datatype dt, fi_op op, void* context) {
  fi_ioc ioc{const_cast<void*>(buf), count};
  fi_ioc cmp{const_cast<void*>(compare), count};
  fi_ioc res{result, count};
  return compare_atomicv(e, &ioc, &desc, 1, &cmp, &compare_desc, 1, &res, &result_desc, 1, dest,
                         addr, key, dt, op, context);
}

int valid_op(fid_ep*, fi_datatype dt, fi_op op, size_t* count, bool cswap) {
  if (!atomic_type_ok(dt) || (cswap ? op != FI_CSWAP : op != FI_SUM)) return -FI_EOPNOTSUPP;
  if (count != nullptr) *count = 1;
  return 0;
}
int writevalid(fid_ep* e, fi_datatype dt, fi_op op, size_t* count) {
  return valid_op(e, dt, op, count, false);
}
int readwritevalid(fid_ep* e, fi_datatype dt, fi_op op, size_t* count) {
  return valid_op(e, dt, op, count, false);
}
int compwritevalid(fid_ep* e, fi_datatype dt, fi_op op, size_t* count) {
  return valid_op(e, dt, op, count, true);
}

}  // namespace

int query_atomic(fid_domain*, fi_datatype dt, fi_op op, fi_atomic_attr* attr, uint64_t flags) {
  const bool cswap = (flags & FI_COMPARE_ATOMIC) != 0;
  if (!atomic_type_ok(dt) || (cswap ? op != FI_CSWAP : op != FI_SUM)) return -FI_EOPNOTSUPP;
  if (attr != nullptr) {
    attr->count = 1;
    attr->size = 8;
  }
  return 0;
}

fi_ops_msg g_msg_ops = {sizeof(fi_ops_msg), recv,      recvv, recvmsg, send, sendv, sendmsg, inject,
                        senddata,           injectdata};
fi_ops_rma g_rma_ops = {sizeof(fi_ops_rma), read,         readv,     readmsg,         write, writev,
                        writemsg,           inject_write, writedata, inject_writedata};
fi_ops_atomic g_atomic_ops = {
    sizeof(fi_ops_atomic), atomic,        atomicv,         atomicmsg,      inject_atomic,
    fetch_atomic,          fetch_atomicv, fetch_atomicmsg, compare_atomic, compare_atomicv,
    compare_atomicmsg,     writevalid,    readwritevalid,  compwritevalid};

}  // namespace dpdat::ofi
