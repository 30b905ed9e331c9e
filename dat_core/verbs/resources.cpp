// PDs, MRs, completion channels, CQs and SRQs.

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "objects.hpp"

#define DPDAT_EXPORT extern "C" __attribute__((visibility("default")))

using namespace dpdat::verbs;  // NOLINT(google-build-using-namespace): the C entry points
namespace dat = dpdat::dat;
namespace rc = dpdat::rc;

namespace {

template <typename T>
T* set_errno(int e) {
  errno = e;
  return nullptr;
}

constexpr unsigned kKnownAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                  IBV_ACCESS_RELAXED_ORDERING;

ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned access) {
  if (pd == nullptr || (addr == nullptr && length > 0)) return set_errno<ibv_mr>(EINVAL);
  // IBV_ACCESS_OPTIONAL_RANGE flags may be ignored; any other unknown one not.
  if ((access & ~(kKnownAccess | IBV_ACCESS_OPTIONAL_RANGE)) != 0)
    return set_errno<ibv_mr>(EOPNOTSUPP);
  // Remote write and atomic access need local write (ibv_reg_mr(3)).
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) != 0 &&
      (access & IBV_ACCESS_LOCAL_WRITE) == 0)
    return set_errno<ibv_mr>(EINVAL);
  auto* p = reinterpret_cast<Pd*>(pd);
  uint32_t priv = rc::priv::kLocalRead;
  if ((access & IBV_ACCESS_LOCAL_WRITE) != 0) priv |= rc::priv::kLocalWrite;
  if ((access & IBV_ACCESS_REMOTE_WRITE) != 0) priv |= rc::priv::kRemoteWrite;
  if ((access & IBV_ACCESS_REMOTE_READ) != 0) priv |= rc::priv::kRemoteRead;
  if ((access & IBV_ACCESS_REMOTE_ATOMIC) != 0) priv |= rc::priv::kRemoteAtomic;
  dat::LmrSpec spec;
  spec.type = dat::MemType::kVirtual;
  spec.host = static_cast<uint8_t*>(addr);
  spec.va = iova;
  spec.length = length;
  auto* m = new Mr{};
  const dat::Status st = dat::lmr_create(p->pz->ia, p->pz, spec, priv, &m->lmr);
  if (!st.ok()) {
    delete m;
    return set_errno<ibv_mr>(to_errno(st));
  }
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = length;
  m->mr.handle = m->lmr->lmr_context;
  m->mr.lkey = m->lmr->lmr_context;
  // Without remote access the key still names the region; the responder
  // refuses every remote access to it for its privileges.
  m->mr.rkey = m->lmr->lmr_context;
  return &m->mr;
}

}  // namespace

// ----------------------------------------------------------------- PD / MR

DPDAT_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* c) {
  if (c == nullptr) return set_errno<ibv_pd>(EINVAL);
  auto* p = new Pd{};
  const dat::Status st = dat::pz_create(ctx_of(c)->ia, &p->pz);
  if (!st.ok()) {
    delete p;
    return set_errno<ibv_pd>(to_errno(st));
  }
  p->pd.context = c;
  p->pd.handle = p->pz->id;
  return &p->pd;
}

DPDAT_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
  if (pd == nullptr) return EINVAL;
  auto* p = reinterpret_cast<Pd*>(pd);
  const dat::Status st = dat::pz_free(p->pz);
  if (!st.ok()) return st.type == dat::Type::INVALID_STATE ? EBUSY : to_errno(st);
  delete p;
  return 0;
}

#undef ibv_reg_mr
#undef ibv_reg_mr_iova
DPDAT_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return reg_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr), static_cast<unsigned>(access));
}

DPDAT_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                     int access) {
  return reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
}

DPDAT_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                      unsigned int access) {
  return reg_mr(pd, addr, length, iova, access);
}

DPDAT_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
  if (mr == nullptr) return EINVAL;
  auto* m = reinterpret_cast<Mr*>(mr);
  const dat::Status st = dat::lmr_free(m->lmr);
  if (!st.ok()) return st.type == dat::Type::INVALID_STATE ? EBUSY : to_errno(st);
  delete m;
  return 0;
}

// ----------------------------------------------------------------- channels / CQs

DPDAT_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* c) {
  if (c == nullptr) return set_errno<ibv_comp_channel>(EINVAL);
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  if (fd < 0) return nullptr;
  auto* ch = new Channel{};
  ch->ch.context = c;
  ch->ch.fd = fd;
  ch->ch.refcnt = 0;
  return &ch->ch;
}

DPDAT_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* chan) {
  if (chan == nullptr) return EINVAL;
  auto* ch = reinterpret_cast<Channel*>(chan);
  {
    std::lock_guard<std::mutex> g(ch->mu);
    if (ch->cqs > 0) return EBUSY;
  }
  close(chan->fd);
  delete ch;
  return 0;
}

DPDAT_EXPORT ibv_cq* ibv_create_cq(ibv_context* c, int cqe, void* cq_context,
                                   ibv_comp_channel* chan, int comp_vector) {
  if (c == nullptr || cqe < 1 || cqe > kMaxCqe || comp_vector < 0 ||
      comp_vector >= c->num_comp_vectors || (chan != nullptr && chan->context != c))
    return set_errno<ibv_cq>(EINVAL);
  Context* ctx = ctx_of(c);
  auto* q = new Cq{};
  q->ctx = ctx;
  q->channel = reinterpret_cast<Channel*>(chan);
  dat::Status st = dat::kOk;
  if (chan != nullptr) st = dat::cno_create(ctx->ia, q, cq_agent, &q->cno);
  if (st.ok()) st = dat::evd_create(ctx->ia, cqe, q->cno, dat::evd_flag::kDto, &q->evd);
  if (!st.ok()) {
    if (q->cno != nullptr) (void)dat::cno_free(q->cno);
    delete q;
    return set_errno<ibv_cq>(to_errno(st));
  }
  q->cq.context = c;
  q->cq.channel = chan;
  q->cq.cq_context = cq_context;
  q->cq.cqe = cqe;
  pthread_mutex_init(&q->cq.mutex, nullptr);
  pthread_cond_init(&q->cq.cond, nullptr);
  if (q->channel != nullptr) {
    std::lock_guard<std::mutex> g(q->channel->mu);
    q->channel->cqs++;
    chan->refcnt++;
  }
  async_register(ctx, q->evd, nullptr, nullptr, q);  // IBV_EVENT_CQ_ERR
  return &q->cq;
}

DPDAT_EXPORT int ibv_destroy_cq(ibv_cq* cq) {
  if (cq == nullptr) return EINVAL;
  auto* q = reinterpret_cast<Cq*>(cq);
  if (q->qps > 0) return EBUSY;
  const dat::Evd* evd = q->evd;
  const dat::Status st = dat::evd_free(q->evd);
  if (!st.ok()) return st.type == dat::Type::INVALID_STATE ? EBUSY : to_errno(st);
  async_forget(q->ctx, evd, cq);
  if (q->cno != nullptr) (void)dat::cno_free(q->cno);
  if (q->channel != nullptr) {
    std::lock_guard<std::mutex> g(q->channel->mu);
    q->channel->cqs--;
    cq->channel->refcnt--;
    std::erase(q->channel->ready, q);  // events not yet read: gone with the CQ
  }
  pthread_cond_destroy(&cq->cond);
  pthread_mutex_destroy(&cq->mutex);
  delete q;
  return 0;
}

DPDAT_EXPORT int ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (cq == nullptr || cqe < 1 || cqe > kMaxCqe) return EINVAL;
  auto* q = reinterpret_cast<Cq*>(cq);
  const dat::Status st = dat::evd_resize(q->evd, cqe);
  if (!st.ok()) return st.type == dat::Type::INVALID_STATE ? EBUSY : to_errno(st);
  cq->cqe = cqe;
  return 0;
}

DPDAT_EXPORT int ibv_get_cq_event(ibv_comp_channel* chan, ibv_cq** cq, void** cq_context) {
  if (chan == nullptr || cq == nullptr || cq_context == nullptr) {
    errno = EINVAL;
    return -1;
  }
  auto* ch = reinterpret_cast<Channel*>(chan);
  uint64_t one = 0;
  if (read(chan->fd, &one, sizeof(one)) != sizeof(one)) return -1;  // errno from read
  std::lock_guard<std::mutex> g(ch->mu);
  if (ch->ready.empty()) {  // its CQ was destroyed meanwhile
    errno = EAGAIN;
    return -1;
  }
  Cq* q = ch->ready.front();
  ch->ready.pop_front();
  q->events_got++;
  *cq = &q->cq;
  *cq_context = q->cq.cq_context;
  return 0;
}

DPDAT_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  if (cq == nullptr) return;
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

// ----------------------------------------------------------------- SRQ

DPDAT_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* init) {
  if (pd == nullptr || init == nullptr) return set_errno<ibv_srq>(EINVAL);
  ibv_srq_attr& a = init->attr;
  // srq_limit is no attribute of creation (ibv_create_srq(3)): the SRQ is
  // armed only by ibv_modify_srq.
  if (a.max_wr < 1 || a.max_wr > (1u << 16) || a.max_sge > kMaxSge)
    return set_errno<ibv_srq>(EINVAL);
  auto* p = reinterpret_cast<Pd*>(pd);
  auto* s = new Srq{};
  const dat::Status st =
      dat::srq_create(p->pz->ia, p->pz, a.max_wr, std::max(a.max_sge, 1u), 0, &s->s);
  if (!st.ok()) {
    delete s;
    return set_errno<ibv_srq>(to_errno(st));
  }
  s->max_wr = a.max_wr;
  s->max_sge = std::max(a.max_sge, 1u);
  s->limit = 0;
  // What was made, as the caller reads it back.
  a.max_sge = s->max_sge;
  a.srq_limit = 0;
  s->srq.context = pd->context;
  s->srq.srq_context = init->srq_context;
  s->srq.pd = pd;
  pthread_mutex_init(&s->srq.mutex, nullptr);
  pthread_cond_init(&s->srq.cond, nullptr);
  async_register(ctx_of(pd->context), s->s, nullptr, s);
  return &s->srq;
}

DPDAT_EXPORT int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  if (srq == nullptr || attr == nullptr) return EINVAL;
  auto* s = reinterpret_cast<Srq*>(srq);
  if ((mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) != 0) return EINVAL;
  // If any attribute is invalid, none is modified (ibv_modify_srq(3)): the
  // limit is checked against the size the SRQ will have before resizing.
  const uint32_t max_wr = (mask & IBV_SRQ_MAX_WR) != 0 ? attr->max_wr : s->max_wr;
  if ((mask & IBV_SRQ_LIMIT) != 0 && attr->srq_limit > max_wr) return EINVAL;
  if ((mask & IBV_SRQ_MAX_WR) != 0) {
    if (const dat::Status st = dat::srq_resize(s->s, attr->max_wr); !st.ok()) return to_errno(st);
    s->max_wr = attr->max_wr;
  }
  if ((mask & IBV_SRQ_LIMIT) != 0) {
    // Before arming: an SRQ already below the limit reports at once, and
    // that event sets the limit back to 0.
    const uint32_t was = s->limit.exchange(attr->srq_limit);
    if (const dat::Status st = dat::srq_set_lw(s->s, attr->srq_limit); !st.ok()) {
      s->limit = was;
      return to_errno(st);
    }
  }
  return 0;
}

DPDAT_EXPORT int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  if (srq == nullptr || attr == nullptr) return EINVAL;
  auto* s = reinterpret_cast<Srq*>(srq);
  attr->max_wr = s->max_wr;
  attr->max_sge = s->max_sge;
  attr->srq_limit = s->limit;
  return 0;
}

DPDAT_EXPORT int ibv_destroy_srq(ibv_srq* srq) {
  if (srq == nullptr) return EINVAL;
  auto* s = reinterpret_cast<Srq*>(srq);
  const dat::Srq* ds = s->s;
  const dat::Status st = dat::srq_free(s->s);
  if (!st.ok()) return st.type == dat::Type::INVALID_STATE ? EBUSY : to_errno(st);
  async_forget(ctx_of(srq->context), ds, srq);
  pthread_cond_destroy(&srq->cond);
  pthread_mutex_destroy(&srq->mutex);
  delete s;
  return 0;
}
