// The verbs fuzzer's actions on PDs, MRs, completion channels, CQs and SRQs,
// the queries and the async events (verbs_run.hpp).

#include <arpa/inet.h>
#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "verbs_run.hpp"

namespace dpdat::fuzz::verbs_world {

namespace {

constexpr unsigned kMrAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
// Not a flag: reg_mr's caller asks for the header's macros with it.
constexpr unsigned kByMacro = 1u << 31;
constexpr int kCqeClass[] = {-1, 0, 1, 2, 16, 64, 65536, 65537};
constexpr uint32_t kSrqWr[] = {0, 1, 4, 16, 65536, 65537};
constexpr uint32_t kSrqSge[] = {0, 1, 2, 8, 9};

template <typename T, size_t N>
T of(const T (&a)[N], uint8_t b) {
  return a[b % N];
}

}  // namespace

// ------------------------------------------------------------------ PD

int Run::alloc_pd(int c) {
  const int i = free_slot(w_.pd, [](const PdS& s) { return s.p != nullptr; });
  if (i < 0) return -1;
  ibv_pd* p = ibv_alloc_pd(w_.ctx[c].c);
  VF_CHECK(p != nullptr && p->context == w_.ctx[c].c);
  w_.pd[i] = PdS{p, c};
  return i;
}

// A PD with MRs, SRQs or QPs on it is busy (EBUSY) and stays usable.
void Run::dealloc_pd() {
  const uint8_t b = in_.u8();
  if ((b & 0x80) != 0) {
    VF_CHECK(ibv_dealloc_pd(nullptr) == EINVAL);
    return;
  }
  const int i = any_pd(b);
  if (i < 0) return;
  const int rc = ibv_dealloc_pd(w_.pd[i].p);
  if (w_.pd_busy(i)) {
    VF_CHECK(rc == EBUSY);
  } else {
    VF_CHECK(rc == 0);
    w_.pd[i] = PdS{};
  }
}

// ------------------------------------------------------------------ MR

// Registers [off, off + len) of the MR slot's buffer (off + len within it),
// at an iova of the kind given: 0 its address, 1 zero-based, 2 far from
// it, 3 ending just below 2^64, 4 past it (wrapping around).
int Run::reg_mr(int p, unsigned access, uint64_t off, uint64_t len, int iova_kind) {
  const int i = free_slot(w_.mr, [](const MrS& s) { return s.m != nullptr; });
  if (i < 0 || p < 0) return -1;
  uint8_t* addr = w_.buf[i].data() + off;
  uint64_t iova = reinterpret_cast<uintptr_t>(addr);
  switch (iova_kind) {
    case 1:
      iova = 0;
      break;
    case 2:
      iova = (uint64_t{0x5A5A} << 32) + off;
      break;
    case 3:
      iova = ~uint64_t{0} - len;
      break;
    case 4:
      iova = ~uint64_t{0} - 64;
      break;
    default:
      break;
  }
  errno = 0;
  // The header's macros pick ibv_reg_mr_iova2 for flags not known when
  // compiled; the exported ibv_reg_mr and ibv_reg_mr_iova are called by name.
  const bool by_macro = (access & kByMacro) != 0;
  access &= ~kByMacro;
  ibv_mr* m = nullptr;
  ibv_pd* pd = w_.pd[p].p;
  const int iaccess = static_cast<int>(access);
  if (iova_kind == 0)
    m = by_macro ? ibv_reg_mr(pd, addr, len, iaccess) : (ibv_reg_mr)(pd, addr, len, iaccess);
  else
    m = by_macro ? ibv_reg_mr_iova2(pd, addr, len, iova, access)
                 : (ibv_reg_mr_iova)(pd, addr, len, iova, iaccess);
  // Unknown flags (outside the optional range) are refused; remote write
  // and atomic access need local write (ibv_reg_mr(3)); a region must not
  // wrap around the address space (its end, iova + length, fits in 64 bits).
  const bool unknown = (access & ~(kMrAccess | IBV_ACCESS_OPTIONAL_RANGE)) != 0;
  const bool needs_lw = (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) != 0 &&
                        (access & IBV_ACCESS_LOCAL_WRITE) == 0;
  const bool wraps = len > 0 && iova + len < iova;
  if (unknown || needs_lw || wraps) {
    VF_CHECK(m == nullptr);
    VF_CHECK(errno == EINVAL || (unknown && errno == EOPNOTSUPP));
    return -1;
  }
  VF_CHECK(m != nullptr);
  VF_CHECK(m->pd == w_.pd[p].p && m->context == w_.pd[p].p->context);
  VF_CHECK(m->addr == addr && m->length == len);
  w_.mr[i] = MrS{m, p, w_.pd[p].ctx, iova, m->lkey};
  return i;
}

void Run::reg_mr_action() {
  const int p = any_pd(in_.u8());
  const uint8_t a = in_.u8(), o = in_.u8(), k = in_.u8();
  unsigned access = a & kMrAccess;
  if ((a & 0x10) != 0) access |= IBV_ACCESS_RELAXED_ORDERING;
  if ((a & 0x20) != 0) access |= 1u << (21 + k % 8);  // the optional range: may be ignored
  if ((a & 0x40) != 0) access |= 1u << (4 + k % 16);  // MW_BIND, ZERO_BASED, ON_DEMAND, ...
  if ((k & 8) != 0) access |= kByMacro;
  const uint64_t off = (o & 0x0F) * 64;
  const uint64_t len = (o & 0x10) != 0 ? (o >> 5) * 8 : kRegion - off;
  if ((a & 0x80) != 0 && p >= 0) {
    // No address with a length: EINVAL.
    errno = 0;
    VF_CHECK(ibv_reg_mr(w_.pd[p].p, nullptr, 64, int{IBV_ACCESS_LOCAL_WRITE}) == nullptr);
    VF_CHECK(errno == EINVAL);
    return;
  }
  (void)reg_mr(p, access, off, len, (k >> 4) % 5);
}

void Run::dereg_mr() {
  const uint8_t b = in_.u8();
  if ((b & 0x80) != 0) {
    VF_CHECK(ibv_dereg_mr(nullptr) == EINVAL);
    return;
  }
  const int i = any_mr(b);
  if (i < 0) return;
  // Requests in flight may still name it: they fail with a protection
  // error, the MR goes anyway.
  VF_CHECK(ibv_dereg_mr(w_.mr[i].m) == 0);
  const uint32_t key = w_.mr[i].key;
  w_.mr[i] = MrS{};
  w_.mr[i].key = key;
}

// ------------------------------------------------------------------ channels, CQs

int Run::create_ch(int c) {
  const int i = free_slot(w_.ch, [](const ChS& s) { return s.ch != nullptr; });
  if (i < 0) return -1;
  ibv_comp_channel* ch = ibv_create_comp_channel(w_.ctx[c].c);
  VF_CHECK(ch != nullptr && ch->context == w_.ctx[c].c);
  VF_CHECK(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0);
  w_.ch[i] = ChS{ch, c};
  return i;
}

void Run::destroy_ch() {
  const uint8_t b = in_.u8();
  if ((b & 0x80) != 0) {
    VF_CHECK(ibv_destroy_comp_channel(nullptr) == EINVAL);
    return;
  }
  const int i = any_ch(b);
  if (i < 0) return;
  const int rc = ibv_destroy_comp_channel(w_.ch[i].ch);
  if (w_.ch_busy(i)) {
    VF_CHECK(rc == EBUSY);
  } else {
    VF_CHECK(rc == 0);
    w_.ch[i] = ChS{};
  }
}

// A CQ of `cqe` entries on context c, with channel slot ch (-1: none).
int Run::create_cq(int c, int cqe, int ch) {
  const int i = free_slot(w_.cq, [](const CqS& s) { return s.cq != nullptr; });
  if (i < 0) return -1;
  errno = 0;
  ibv_cq* q = ibv_create_cq(w_.ctx[c].c, cqe, &w_.cq[i], ch >= 0 ? w_.ch[ch].ch : nullptr, 0);
  const bool foreign = ch >= 0 && w_.ch[ch].ctx != c;
  if (cqe < 1 || cqe > 65536 || foreign) {
    VF_CHECK(q == nullptr && errno == EINVAL);
    return -1;
  }
  VF_CHECK(q != nullptr && q->cqe >= cqe && q->context == w_.ctx[c].c);
  VF_CHECK(q->cq_context == &w_.cq[i]);
  w_.cq[i] = CqS{q, c, ch};
  return i;
}

void Run::create_cq_action() {
  const int c = in_.u8() % kCtx;
  const uint8_t b = in_.u8();
  const int ch = (b & 0x10) != 0 ? any_ch(b >> 5) : -1;
  if ((b & 0x08) != 0) {
    // A completion vector the context does not have.
    errno = 0;
    VF_CHECK(ibv_create_cq(w_.ctx[c].c, 4, nullptr, nullptr, (b & 1) != 0 ? -1 : 1) == nullptr);
    VF_CHECK(errno == EINVAL);
    return;
  }
  (void)create_cq(c, of(kCqeClass, b), ch);
}

void Run::destroy_cq() {
  const uint8_t b = in_.u8();
  if ((b & 0x80) != 0) {
    VF_CHECK(ibv_destroy_cq(nullptr) == EINVAL);
    return;
  }
  const int i = any_cq(b);
  if (i < 0) return;
  const int rc = ibv_destroy_cq(w_.cq[i].cq);
  if (w_.cq_busy(i)) {
    VF_CHECK(rc == EBUSY);
  } else {
    VF_CHECK(rc == 0);
    w_.cq[i] = CqS{};
  }
}

void Run::resize_cq() {
  const int i = any_cq(in_.u8());
  if (i < 0) return;
  const int cqe = of(kCqeClass, in_.u8());
  const int rc = ibv_resize_cq(w_.cq[i].cq, cqe);
  if (cqe < 1 || cqe > 65536) {
    VF_CHECK(rc == EINVAL);
  } else if (rc == 0) {
    VF_CHECK(w_.cq[i].cq->cqe >= cqe);
  } else {
    // Fewer entries than completions waiting, or a CQ the device cannot
    // resize now.
    VF_CHECK(rc == EINVAL || rc == ENOMEM || rc == EBUSY || rc == EOPNOTSUPP);
  }
}

// ------------------------------------------------------------------ SRQs

void Run::create_srq() {
  const int p = any_pd(in_.u8());
  const uint8_t b = in_.u8();
  const int i = free_slot(w_.srq, [](const SrqS& s) { return s.s != nullptr; });
  if (p < 0 || i < 0) return;
  ibv_srq_init_attr init{};
  init.srq_context = &w_.srq[i];
  init.attr.max_wr = of(kSrqWr, b);
  init.attr.max_sge = of(kSrqSge, b >> 3);
  init.attr.srq_limit = (b & 0x40) != 0 ? init.attr.max_wr + 1 : (b >> 7);
  const ibv_srq_attr asked = init.attr;
  errno = 0;
  ibv_srq* s = ibv_create_srq(w_.pd[p].p, &init);
  // srq_limit is not an attribute of creation (ibv_create_srq(3)).
  if (asked.max_wr < 1 || asked.max_wr > 65536 || asked.max_sge > 8) {
    VF_CHECK(s == nullptr && errno == EINVAL);
    return;
  }
  VF_CHECK(s != nullptr && s->pd == w_.pd[p].p && s->srq_context == &w_.srq[i]);
  SrqS& x = w_.srq[i];
  x = SrqS{s, p, w_.pd[p].ctx, ++w_.serials, {}};
  VF_CHECK(ibv_query_srq(s, &x.attr) == 0);
  // What was made is told back: at least what was asked, not armed.
  VF_CHECK(init.attr.max_wr >= asked.max_wr && init.attr.max_sge >= asked.max_sge);
  VF_CHECK(x.attr.max_wr == init.attr.max_wr && x.attr.max_sge == init.attr.max_sge);
  VF_CHECK(x.attr.srq_limit == 0);
}

void Run::destroy_srq() {
  const uint8_t b = in_.u8();
  if ((b & 0x80) != 0) {
    VF_CHECK(ibv_destroy_srq(nullptr) == EINVAL);
    return;
  }
  const int i = any_srq(b);
  if (i < 0) return;
  const int rc = ibv_destroy_srq(w_.srq[i].s);
  if (w_.srq_busy(i)) {
    VF_CHECK(rc == EBUSY);
    return;
  }
  VF_CHECK(rc == 0);
  w_.forget(Wr::kSrqRecv, w_.srq[i].serial);
  w_.srq[i] = SrqS{};
}

// ibv_modify_srq(3): IBV_SRQ_MAX_WR resizes, IBV_SRQ_LIMIT arms (at most
// max_wr); if any attribute is invalid, none is modified.
void Run::modify_srq() {
  const int i = any_srq(in_.u8());
  if (i < 0) return;
  const uint8_t b = in_.u8();
  SrqS& x = w_.srq[i];
  ibv_srq_attr before{};
  VF_CHECK(ibv_query_srq(x.s, &before) == 0);
  ibv_srq_attr a{};
  int mask = b & 3;
  if ((b & 0x80) != 0) mask |= 1 << (2 + (b >> 2) % 8);  // no such attribute
  a.max_wr = of(kSrqWr, b >> 2);
  a.srq_limit = (b & 0x40) != 0 ? a.max_wr + 1 : (b >> 3) & 7;
  const int rc = ibv_modify_srq(x.s, &a, mask);
  ibv_srq_attr after{};
  VF_CHECK(ibv_query_srq(x.s, &after) == 0);
  if (rc != 0) {
    VF_CHECK(rc == EINVAL || rc == ENOMEM || rc == EOPNOTSUPP);
    VF_CHECK(after.max_wr == before.max_wr && after.max_sge == before.max_sge);
    // The limit may have been reached meanwhile (and reads 0).
    VF_CHECK(after.srq_limit == before.srq_limit || after.srq_limit == 0);
    x.attr = after;
    return;
  }
  VF_CHECK((mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) == 0);
  const uint32_t max_wr = (mask & IBV_SRQ_MAX_WR) != 0 ? a.max_wr : before.max_wr;
  if ((mask & IBV_SRQ_MAX_WR) != 0) VF_CHECK(after.max_wr >= a.max_wr);
  if ((mask & IBV_SRQ_LIMIT) != 0) {
    VF_CHECK(a.srq_limit <= max_wr);
    VF_CHECK(after.srq_limit == a.srq_limit || after.srq_limit == 0);
  }
  x.attr = after;
}

// ------------------------------------------------------------------ notification

// Arms a CQ and reads its channel (non-blocking): every event names a live
// CQ of that channel, with its context.
void Run::notify() {
  const uint8_t b = in_.u8();
  const int i = any_cq(b);
  if (i >= 0) {
    const int rc = ibv_req_notify_cq(w_.cq[i].cq, (b >> 4) & 1);
    if (w_.cq[i].ch >= 0)
      VF_CHECK(rc == 0);
    else
      VF_CHECK(rc == 0 || rc == EINVAL);
  }
  const int h = any_ch(b >> 5);
  if (h < 0) return;
  for (int k = 0; k < 4; ++k) {
    ibv_cq* cq = nullptr;
    void* cq_ctx = nullptr;
    errno = 0;
    if (ibv_get_cq_event(w_.ch[h].ch, &cq, &cq_ctx) != 0) {
      VF_CHECK(errno == EAGAIN);
      return;
    }
    bool live = false;
    for (const CqS& q : w_.cq) live |= q.cq == cq && q.ch == h && cq_ctx == &q;
    VF_CHECK(live);
    ibv_ack_cq_events(cq, 1);
  }
}

// ------------------------------------------------------------------ queries

void Run::async_events(int c) {
  for (int k = 0; k < 16; ++k) {
    ibv_async_event ev{};
    errno = 0;
    if (ibv_get_async_event(w_.ctx[c].c, &ev) != 0) {
      VF_CHECK(errno == EAGAIN);
      return;
    }
    bool live = false;
    switch (ev.event_type) {
      case IBV_EVENT_QP_FATAL:
      case IBV_EVENT_QP_LAST_WQE_REACHED:
      case IBV_EVENT_SQ_DRAINED:
      case IBV_EVENT_COMM_EST:
        for (const QpS& q : w_.qp)
          live |= q.q == ev.element.qp && q.ctx == c &&
                  (ev.event_type != IBV_EVENT_QP_LAST_WQE_REACHED || q.srq >= 0);
        break;
      case IBV_EVENT_SRQ_LIMIT_REACHED:
        for (const SrqS& s : w_.srq) live |= s.s == ev.element.srq && s.ctx == c;
        break;
      case IBV_EVENT_CQ_ERR:
        for (const CqS& q : w_.cq) live |= q.cq == ev.element.cq && q.ctx == c;
        break;
      default:
        break;
    }
    VF_CHECK(live && ibv_event_type_str(ev.event_type) != nullptr);
    ibv_ack_async_event(&ev);
  }
}

void Run::query() {
  const uint8_t b = in_.u8();
  const int c = (b >> 3) % kCtx;
  ibv_context* ctx = w_.ctx[c].c;
  switch (b & 7) {
    case 0: {
      const int i = any_qp(b >> 3);
      if (i >= 0) (void)sync_state(i);
      break;
    }
    case 1: {
      ibv_port_attr pa{};
      const uint8_t port = static_cast<uint8_t>((b >> 5) % 3);
      const int rc = ibv_query_port(ctx, port, &pa);
      if (port == 1) {
        VF_CHECK(rc == 0 && pa.state == IBV_PORT_ACTIVE && pa.active_mtu == w_.ctx[c].mtu);
      } else {
        VF_CHECK(rc == EINVAL);
      }
      // The exported call old binaries use, with the shorter struct.
      ibv_port_attr old{};  // (the old struct is its first fields)
      VF_CHECK((ibv_query_port)(ctx, port, reinterpret_cast<_compat_ibv_port_attr*>(&old)) ==
               (port == 1 ? 0 : EINVAL));
      if (port == 1) VF_CHECK(old.state == IBV_PORT_ACTIVE && old.active_mtu == w_.ctx[c].mtu);
      break;
    }
    case 2: {
      ibv_device_attr da{};
      VF_CHECK(ibv_query_device(ctx, &da) == 0);
      VF_CHECK(da.phys_port_cnt == 1 && da.max_qp_rd_atom == static_cast<int>(kMaxRdAtomic));
      VF_CHECK(ibv_query_device(ctx, nullptr) == EINVAL);
      ibv_device_attr_ex ax{};
      VF_CHECK(ibv_query_device_ex(ctx, nullptr, &ax) == 0);
      VF_CHECK(ax.orig_attr.max_qp_wr == da.max_qp_wr && ax.orig_attr.node_guid == da.node_guid);
      VF_CHECK(ibv_get_device_guid(ctx->device) == da.node_guid);
      VF_CHECK(ibv_get_device_index(ctx->device) == (c == 1 ? 1 : 0));
      VF_CHECK(ibv_get_device_name(ctx->device) != nullptr);
      break;
    }
    case 3: {
      ibv_gid gid{};
      const int index = (b >> 5) % 2;
      const uint8_t port = static_cast<uint8_t>(1 + ((b >> 6) & 1));
      const int rc = ibv_query_gid(ctx, port, index, &gid);
      if (index == 0 && port == 1) {
        VF_CHECK(rc == 0 && std::memcmp(&gid, &w_.ctx[c].gid, sizeof(gid)) == 0);
      } else {
        VF_CHECK(rc == -1);
      }
      __be16 pkey = 0;
      VF_CHECK((ibv_query_pkey(ctx, port, index, &pkey) == 0) == (index == 0 && port == 1));
      // The index of a P_Key, -1 on error (ibv_get_pkey_index(3)).
      VF_CHECK(ibv_get_pkey_index(ctx, port, htons(0xFFFF)) == (port == 1 ? 0 : -1));
      VF_CHECK(ibv_get_pkey_index(ctx, port, htons(0x1234)) == -1);
      ibv_gid_entry e{};
      const int rx = ibv_query_gid_ex(ctx, port, static_cast<uint32_t>(index), &e, 0);
      if (index == 0 && port == 1) {
        VF_CHECK(rx == 0 && e.gid_type == IBV_GID_TYPE_ROCE_V2);
        VF_CHECK(std::memcmp(&e.gid, &w_.ctx[c].gid, sizeof(gid)) == 0);
      } else {
        VF_CHECK(rx == EINVAL || rx == ENODATA);
      }
      ibv_gid_entry t[2]{};
      VF_CHECK(ibv_query_gid_table(ctx, t, 2, 0) == 1);
      VF_CHECK(ibv_query_gid_table(ctx, t, 0, 0) == -EINVAL);
      break;
    }
    case 4: {
      const int i = any_srq(b >> 3);
      if (i < 0) break;
      ibv_srq_attr a{};
      VF_CHECK(ibv_query_srq(w_.srq[i].s, &a) == 0);
      VF_CHECK(a.max_wr == w_.srq[i].attr.max_wr && a.max_sge == w_.srq[i].attr.max_sge);
      VF_CHECK(a.srq_limit == w_.srq[i].attr.srq_limit || a.srq_limit == 0);
      w_.srq[i].attr = a;
      break;
    }
    case 5: {
      // An address handle for the other context's GID (none without a GRH
      // or a PD), no objects for NULL.
      const int p = any_pd(b >> 3);
      ibv_ah_attr ah{};
      ah.is_global = (b & 0x80) != 0 ? 0 : 1;
      ah.port_num = 1;
      ah.grh.dgid = w_.ctx[1].gid;
      errno = 0;
      ibv_ah* made = ibv_create_ah(p >= 0 ? w_.pd[p].p : nullptr, &ah);
      if (p < 0 || ah.is_global == 0) {
        VF_CHECK(made == nullptr && errno == EINVAL);
      } else {
        VF_CHECK(made != nullptr || errno == EHOSTUNREACH);
        if (made != nullptr) VF_CHECK(ibv_destroy_ah(made) == 0);
      }
      errno = 0;
      VF_CHECK(ibv_alloc_pd(nullptr) == nullptr && errno == EINVAL);
      errno = 0;
      VF_CHECK(ibv_create_comp_channel(nullptr) == nullptr && errno == EINVAL);
      errno = 0;
      VF_CHECK(ibv_open_device(nullptr) == nullptr && errno == EINVAL);
      if (const int i = any_qp(b); i >= 0) {
        errno = 0;
        VF_CHECK(ibv_qp_to_qp_ex(w_.qp[i].q) == nullptr && errno == EOPNOTSUPP);
      }
      VF_CHECK(ibv_fork_init() == 0 && ibv_is_fork_initialized() == IBV_FORK_UNNEEDED);
      break;
    }
    default:
      async_events(c);
      break;
  }
}

}  // namespace dpdat::fuzz::verbs_world
