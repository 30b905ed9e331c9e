// The uDAPL 1.2 C entry points (libdat.so): argument checks, DAT 1.2 struct
// conversion and the Status -> DAT_RETURN mapping (the one place it is
// done), over the dat_core objects.  Every call may be made from any thread.

#include <arpa/inet.h>
#include <dat/udat.h>
#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "../core.hpp"
#include "dpdk/port.hpp"

using namespace dpdat::dat;  // NOLINT(google-build-using-namespace): C entry points only

namespace {

DAT_RETURN to_dat(Status s) {
  if (s.ok()) return DAT_SUCCESS;
  if (s.type == Type::QUEUE_EMPTY) return DAT_QUEUE_EMPTY;  // exactly, as dtest expects
  uint32_t t = 0;
  switch (s.type) {
#define DPDAT_MAP_TYPE(n) \
  case Type::n:           \
    t = DAT_##n;          \
    break;
    DPDAT_RETURN_TYPES(DPDAT_MAP_TYPE)
#undef DPDAT_MAP_TYPE
  }
  uint32_t sub = 0;
  switch (s.sub) {
#define DPDAT_MAP_SUB(n) \
  case Sub::n:           \
    sub = DAT_##n;       \
    break;
    DPDAT_RETURN_SUBTYPES(DPDAT_MAP_SUB)
#undef DPDAT_MAP_SUB
  }
  return static_cast<DAT_RETURN>(DAT_CLASS_ERROR | t | sub);
}

DAT_RETURN err(Type t, Sub s = Sub::NO_SUBTYPE) { return to_dat(fail(t, s)); }

void fill_sa(unsigned char* out, uint32_t ip) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(ip);
  std::memcpy(out, &sa, sizeof(sa));
}

template <typename T>
void adopt(Ia* ia, T* o) {
  register_handle(o);
  ia->children.insert(o);
}
template <typename T>
void destroy(T* o) {
  unregister_handle(o);
  if (o->ia != nullptr && o->ia != static_cast<Object*>(o)) o->ia->children.erase(o);
  delete o;
}

using Lock = std::unique_lock<std::mutex>;

// Spin briefly (driving this and the process's other interfaces), then
// sleep on `cv` with doubling back-off, driving the interface at every
// wake-up.  pred() is checked under the interface lock.  Returns false on
// timeout.  The back-off is capped by the interface's idle_us, so a waiter
// neither burns a core nor sleeps past a due event by more than that.
template <typename Pred>
bool wait_for(Iface* f, Lock& lk, std::condition_variable& cv, DAT_TIMEOUT timeout, Pred pred) {
  const uint64_t start = now_ns();
  const bool infinite = timeout == DAT_TIMEOUT_INFINITE;
  const uint64_t deadline = infinite ? UINT64_MAX : start + uint64_t{timeout} * 1000;
  constexpr uint64_t kSpinNs = 50'000;
  uint64_t sleep_us = 1;
  for (;;) {
    uint64_t now = now_ns();
    f->progress(now, true);
    if (pred()) return true;
    now = now_ns();
    if (now >= deadline) return false;
    if (now - start < kSpinNs) {
      lk.unlock();
      progress_others(f);
      std::this_thread::yield();
      lk.lock();
      continue;
    }
    const uint64_t left_us = (deadline - now) / 1000 + 1;
    cv.wait_for(lk, std::chrono::microseconds(std::min<uint64_t>(sleep_us, left_us)));
    sleep_us = std::min<uint64_t>(sleep_us * 2, f->cfg.idle_us);
    if (pred()) return true;
    lk.unlock();
    progress_others(f);
    lk.lock();
  }
}

void to_dat_event(const Event& ev, DAT_EVENT* out) {
  std::memset(out, 0, sizeof(*out));
  out->event_number = static_cast<DAT_EVENT_NUMBER>(ev.num);
  out->evd_handle = ev.evd;
  switch (ev.num) {
    case EventNum::kDto: {
      auto& d = out->event_data.dto_completion_event_data;
      d.ep_handle = ev.ep;
      d.user_cookie.as_64 = ev.cookie;
      d.status = static_cast<DAT_DTO_COMPLETION_STATUS>(ev.status);
      d.transfered_length = ev.length;
      break;
    }
    case EventNum::kRmrBind: {
      auto& d = out->event_data.rmr_completion_event_data;
      d.rmr_handle = ev.rmr;
      d.user_cookie.as_64 = ev.cookie;
      d.status = static_cast<DAT_RMR_BIND_COMPLETION_STATUS>(ev.status);
      break;
    }
    case EventNum::kConnRequest: {
      auto& d = out->event_data.cr_arrival_event_data;
      if (ev.sp->type == HandleType::kPsp)
        d.sp_handle.psp_handle = ev.sp;
      else
        d.sp_handle.rsp_handle = ev.sp;
      d.local_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(ev.sp->ia->local_sa);
      d.conn_qual = ev.conn_qual;
      d.cr_handle = ev.cr;
      break;
    }
    case EventNum::kEstablished:
    case EventNum::kPeerRejected:
    case EventNum::kNonPeerRejected:
    case EventNum::kAcceptCompletionError:
    case EventNum::kDisconnected:
    case EventNum::kBroken:
    case EventNum::kTimedOut:
    case EventNum::kUnreachable: {
      auto& d = out->event_data.connect_event_data;
      d.ep_handle = ev.ep;
      d.private_data_size = static_cast<DAT_COUNT>(ev.pdata_len);
      d.private_data = ev.pdata_len > 0 ? const_cast<uint8_t*>(ev.pdata) : nullptr;
      break;
    }
    case EventNum::kEvdOverflow:
    case EventNum::kIaCatastrophic:
    case EventNum::kEpBroken:
    case EventNum::kAsyncTimedOut: {
      auto& d = out->event_data.asynch_error_event_data;
      d.dat_handle = ev.ia;
      d.reason = 0;
      break;
    }
    case EventNum::kSoftware:
      out->event_data.software_event_data.pointer = const_cast<void*>(ev.sw_pointer);
      break;
  }
}

// Takes the oldest event; refills from the overflow list.  Lock held.
bool pop_event(Evd* evd, DAT_EVENT* out) {
  if (evd->q.empty()) return false;
  to_dat_event(evd->q.front(), out);
  evd->q.pop_front();
  while (!evd->overflow.empty() && evd->q.size() < evd->qlen) {
    evd->q.push_back(evd->overflow.front());
    evd->overflow.pop_front();
  }
  return true;
}

Status make_evd(Ia* ia, DAT_COUNT qlen, Cno* cno, uint32_t flags, Evd** out) {
  Iface* f = ia->iface;
  if (qlen <= 0 || static_cast<uint32_t>(qlen) > f->limits.max_evd_qlen)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (flags == 0 || (flags & ~0x1F1u) != 0) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  auto* e = new Evd(ia);
  e->qlen = static_cast<uint32_t>(qlen);
  e->flags = flags;
  e->cno = cno;
  if (cno != nullptr) cno->evds++;
  if ((flags & (evd_flag::kDto | evd_flag::kRmrBind)) != 0) {
    e->cq = std::make_unique<dpdat::rc::CompletionQueue>(e->qlen);
    f->cq_evds.push_back(e);
  }
  adopt(ia, e);
  *out = e;
  return kOk;
}

void free_evd(Evd* e) {
  Iface* f = e->ia->iface;
  if (e->cq) f->cq_evds.erase(std::find(f->cq_evds.begin(), f->cq_evds.end(), e));
  if (e->cno != nullptr) e->cno->evds--;
  destroy(e);
}

void free_ep(Ep* ep) {
  Iface* f = ep->ia->iface;
  if (ep->state == EpState::kConnected || ep->state == EpState::kPassivePending ||
      ep->state == EpState::kActivePending || ep->state == EpState::kDisconnectPending) {
    ep->conn_evd = nullptr;  // freeing: no connection event for this EP any more
    (void)f->disconnect(ep, true);
  }
  f->drop_ep(ep);
  f->destroy_qp(ep);
  for (Evd* e : {ep->recv_evd, ep->req_evd, ep->conn_evd})
    if (e != nullptr) e->refs--;
  if (ep->pz != nullptr) ep->pz->refs--;
  if (ep->sp != nullptr && ep->sp->ep == ep) ep->sp->ep = nullptr;
  destroy(ep);
}

void free_sp(Sp* sp) {
  Iface* f = sp->ia->iface;
  auto it = f->listeners.find(sp->conn_qual);
  if (it != f->listeners.end() && it->second == sp) f->listeners.erase(it);
  for (Object* o : sp->ia->children)
    if (o->type == HandleType::kCr && static_cast<Cr*>(o)->sp == sp)
      static_cast<Cr*>(o)->sp = nullptr;
  if (sp->ep != nullptr && sp->ep->state == EpState::kReserved)
    sp->ep->state = EpState::kUnconnected;
  if (sp->ep != nullptr && sp->ep->sp == sp) sp->ep->sp = nullptr;
  if (sp->evd != nullptr) sp->evd->refs--;
  destroy(sp);
}

Status free_lmr(Lmr* l) {
  if (l->children > 0) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_LMR_IN_USE);
  Iface* f = l->ia->iface;
  bool in_use = false;
  const auto e = f->mr->lmr_free(l->lmr_context, &in_use);
  if (in_use) return fail(Type::INVALID_STATE, Sub::INVALID_STATE_LMR_IN_USE);
  if (e != dpdat::rc::AccessError::kOk) return fail(Type::INTERNAL_ERROR);
  f->lmr_by_ctx.erase(l->lmr_context);
  if (l->parent != nullptr) l->parent->children--;
  l->pz->refs--;
  destroy(l);
  return kOk;
}

void free_rmr(Rmr* r) {
  r->ia->iface->mr->rmr_free(r->slot);
  r->pz->refs--;
  destroy(r);
}

// Releases everything an IA owns (abrupt close), children before parents.
void free_children(Ia* ia) {
  auto of_type = [ia](HandleType t) {
    std::vector<Object*> v;
    for (Object* o : ia->children)
      if (o->type == t) v.push_back(o);
    return v;
  };
  for (Object* o : of_type(HandleType::kCr)) ia->iface->drop_cr(static_cast<Cr*>(o));
  for (HandleType t : {HandleType::kPsp, HandleType::kRsp})
    for (Object* o : of_type(t)) free_sp(static_cast<Sp*>(o));
  for (Object* o : of_type(HandleType::kEp)) free_ep(static_cast<Ep*>(o));
  for (Object* o : of_type(HandleType::kRmr)) free_rmr(static_cast<Rmr*>(o));
  // LMRs over other LMRs first.
  for (int pass = 0; pass < 2; ++pass)
    for (Object* o : of_type(HandleType::kLmr)) {
      auto* l = static_cast<Lmr*>(o);
      if (pass == 1 || l->parent != nullptr) (void)free_lmr(l);
    }
  for (Object* o : of_type(HandleType::kEvd)) free_evd(static_cast<Evd*>(o));
  for (Object* o : of_type(HandleType::kCno)) destroy(static_cast<Cno*>(o));
  for (Object* o : of_type(HandleType::kPz)) destroy(static_cast<Pz*>(o));
}

Status check_ep_attr(const Iface* f, const DAT_EP_ATTR& a) {
  if (a.service_type != DAT_SERVICE_TYPE_RC)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  if (a.max_recv_dtos < 0 || a.max_request_dtos < 0 ||
      static_cast<uint32_t>(a.max_recv_dtos) > f->limits.max_dto_per_ep ||
      static_cast<uint32_t>(a.max_request_dtos) > f->limits.max_dto_per_ep)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  if (a.max_recv_iov < 0 || a.max_request_iov < 0 ||
      static_cast<uint32_t>(a.max_recv_iov) > f->limits.max_iov ||
      static_cast<uint32_t>(a.max_request_iov) > f->limits.max_iov)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  if (a.max_message_size > f->limits.max_message_size ||
      a.max_rdma_size > f->limits.max_message_size)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  if (a.max_rdma_read_in < 0 || a.max_rdma_read_out < 0 ||
      static_cast<uint32_t>(a.max_rdma_read_in) > f->limits.max_rdma_read_per_ep ||
      static_cast<uint32_t>(a.max_rdma_read_out) > f->limits.max_rdma_read_per_ep)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  return kOk;
}

EpAttr from_dat(const DAT_EP_ATTR& a) {
  EpAttr e;
  e.max_message_size = a.max_message_size;
  e.max_rdma_size = a.max_rdma_size;
  e.qos = static_cast<uint32_t>(a.qos);
  e.recv_completion_flags = static_cast<uint32_t>(a.recv_completion_flags);
  e.request_completion_flags = static_cast<uint32_t>(a.request_completion_flags);
  e.max_recv_dtos = static_cast<uint32_t>(a.max_recv_dtos);
  e.max_request_dtos = static_cast<uint32_t>(a.max_request_dtos);
  e.max_recv_iov = static_cast<uint32_t>(a.max_recv_iov);
  e.max_request_iov = static_cast<uint32_t>(a.max_request_iov);
  e.max_rdma_read_in = static_cast<uint32_t>(a.max_rdma_read_in);
  e.max_rdma_read_out = static_cast<uint32_t>(a.max_rdma_read_out);
  e.srq_soft_hw = static_cast<uint32_t>(a.srq_soft_hw);
  e.max_rdma_read_iov = static_cast<uint32_t>(a.max_rdma_read_iov);
  e.max_rdma_write_iov = static_cast<uint32_t>(a.max_rdma_write_iov);
  return e;
}

void to_dat(const EpAttr& e, DAT_EP_ATTR* a) {
  std::memset(a, 0, sizeof(*a));
  a->service_type = DAT_SERVICE_TYPE_RC;
  a->max_message_size = e.max_message_size;
  a->max_rdma_size = e.max_rdma_size;
  a->qos = static_cast<DAT_QOS>(e.qos);
  a->recv_completion_flags = static_cast<DAT_COMPLETION_FLAGS>(e.recv_completion_flags);
  a->request_completion_flags = static_cast<DAT_COMPLETION_FLAGS>(e.request_completion_flags);
  a->max_recv_dtos = static_cast<DAT_COUNT>(e.max_recv_dtos);
  a->max_request_dtos = static_cast<DAT_COUNT>(e.max_request_dtos);
  a->max_recv_iov = static_cast<DAT_COUNT>(e.max_recv_iov);
  a->max_request_iov = static_cast<DAT_COUNT>(e.max_request_iov);
  a->max_rdma_read_in = static_cast<DAT_COUNT>(e.max_rdma_read_in);
  a->max_rdma_read_out = static_cast<DAT_COUNT>(e.max_rdma_read_out);
  a->srq_soft_hw = static_cast<DAT_COUNT>(e.srq_soft_hw);
  a->max_rdma_read_iov = static_cast<DAT_COUNT>(e.max_rdma_read_iov);
  a->max_rdma_write_iov = static_cast<DAT_COUNT>(e.max_rdma_write_iov);
}

DAT_EP_STATE to_dat(EpState s) {
  switch (s) {
    case EpState::kUnconnected:
      return DAT_EP_STATE_UNCONNECTED;
    case EpState::kActivePending:
      return DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
    case EpState::kPassivePending:
      return DAT_EP_STATE_PASSIVE_CONNECTION_PENDING;
    case EpState::kTentativePending:
      return DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
    case EpState::kConnected:
      return DAT_EP_STATE_CONNECTED;
    case EpState::kDisconnectPending:
      return DAT_EP_STATE_DISCONNECT_PENDING;
    case EpState::kDisconnected:
      return DAT_EP_STATE_DISCONNECTED;
    case EpState::kReserved:
      return DAT_EP_STATE_RESERVED;
  }
  return DAT_EP_STATE_UNCONNECTED;
}

Sub ep_state_sub(EpState s) {
  switch (s) {
    case EpState::kUnconnected:
      return Sub::INVALID_STATE_EP_UNCONNECTED;
    case EpState::kActivePending:
      return Sub::INVALID_STATE_EP_ACTCONNPENDING;
    case EpState::kPassivePending:
      return Sub::INVALID_STATE_EP_PASSCONNPENDING;
    case EpState::kTentativePending:
      return Sub::INVALID_STATE_EP_TENTCONNPENDING;
    case EpState::kConnected:
      return Sub::INVALID_STATE_EP_CONNECTED;
    case EpState::kDisconnectPending:
      return Sub::INVALID_STATE_EP_DISCPENDING;
    case EpState::kDisconnected:
      return Sub::INVALID_STATE_EP_DISCONNECTED;
    case EpState::kReserved:
      return Sub::INVALID_STATE_EP_RESERVED;
  }
  return Sub::NO_SUBTYPE;
}

// Checks an EVD role for an EP: NULL is allowed; otherwise it must be an EVD
// of the same IA with the stream's flag.
bool evd_ok(Ia* ia, DAT_EVD_HANDLE h, uint32_t flag, Evd** out) {
  *out = nullptr;
  if (h == DAT_HANDLE_NULL) return true;
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr || e->ia->iface != ia->iface || (e->flags & flag) == 0) return false;
  *out = e;
  return true;
}

// DTO posting ---------------------------------------------------------------

Status fill_sges(const Ep* ep, DAT_COUNT n, const DAT_LMR_TRIPLET* iov, uint32_t max_iov,
                 dpdat::rc::Sge* sge, uint32_t* nsge, uint64_t* total) {
  if (n < 0 || static_cast<uint32_t>(n) > max_iov || static_cast<uint32_t>(n) > dpdat::rc::kMaxSge)
    return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (n > 0 && iov == nullptr) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  *total = 0;
  for (DAT_COUNT i = 0; i < n; ++i) {
    sge[i] = dpdat::rc::Sge{iov[i].lmr_context, iov[i].virtual_address, iov[i].segment_length};
    *total += iov[i].segment_length;
  }
  *nsge = static_cast<uint32_t>(n);
  if (*total > ep->attr.max_message_size) return fail(Type::LENGTH_ERROR);
  return kOk;
}

Status request_flags(const Ep* ep, DAT_COMPLETION_FLAGS fl, uint32_t* wr_flags) {
  const uint32_t f = static_cast<uint32_t>(fl);
  if ((f & ~0x0Fu) != 0) return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  *wr_flags = dpdat::rc::wr_flag::kSignaled;
  if ((f & cflag::kUnsignalled) != 0) {
    if ((ep->attr.request_completion_flags & cflag::kUnsignalled) == 0)
      return fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
    *wr_flags = 0;
  }
  if ((f & cflag::kSuppress) != 0) *wr_flags = 0;
  if ((f & cflag::kBarrierFence) != 0) *wr_flags |= dpdat::rc::wr_flag::kFence;
  if ((f & cflag::kSolicitedWait) != 0) *wr_flags |= dpdat::rc::wr_flag::kSolicited;
  return kOk;
}

Status post_result(Iface* f, dpdat::rc::Qp::PostResult r, const Ep* ep) {
  switch (r) {
    case dpdat::rc::Qp::PostResult::kOk:
      f->progress(now_ns(), true);  // inline progress: the request leaves now
      return kOk;
    case dpdat::rc::Qp::PostResult::kQueueFull:
      return fail(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_TEP);
    case dpdat::rc::Qp::PostResult::kInvalidState:
      return fail(Type::INVALID_STATE, ep_state_sub(ep->state));
    case dpdat::rc::Qp::PostResult::kInvalidWr:
      return fail(Type::INVALID_PARAMETER);
  }
  return fail(Type::INTERNAL_ERROR);
}

DAT_RETURN post_send_like(DAT_EP_HANDLE h, DAT_COUNT n, const DAT_LMR_TRIPLET* iov,
                          DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote,
                          DAT_COMPLETION_FLAGS flags, dpdat::rc::WrOp op) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  Iface* f = ep->ia->iface;
  Lock lk(f->mu);
  if (ep->state != EpState::kConnected || ep->qp == nullptr)
    return err(Type::INVALID_STATE, ep_state_sub(ep->state));
  dpdat::rc::SendWr wr;
  wr.cookie = cookie.as_64;
  wr.op = op;
  uint64_t total = 0;
  const uint32_t max_iov = op == dpdat::rc::WrOp::kRead    ? ep->attr.max_rdma_read_iov
                           : op == dpdat::rc::WrOp::kWrite ? ep->attr.max_rdma_write_iov
                                                           : ep->attr.max_request_iov;
  Status st = fill_sges(ep, n, iov, max_iov, wr.sge, &wr.num_sge, &total);
  if (st.ok()) st = request_flags(ep, flags, &wr.flags);
  if (st.ok() && remote != nullptr) {
    if (total > remote->segment_length) st = fail(Type::LENGTH_ERROR);
    if (total > ep->attr.max_rdma_size) st = fail(Type::LENGTH_ERROR);
    wr.rkey = remote->rmr_context;
    wr.remote_va = remote->target_address;
  } else if (st.ok() && op != dpdat::rc::WrOp::kSend) {
    st = fail(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  }
  if (!st.ok()) return to_dat(st);
  return to_dat(post_result(f, ep->qp->post_send(wr), ep));
}

// Lengths and ranges of a sync call: every segment inside its LMR.
DAT_RETURN lmr_sync(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET* seg, DAT_VLEN n) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (n > 0 && seg == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Lock lk(ia->iface->mu);
  for (DAT_VLEN i = 0; i < n; ++i) {
    dpdat::rc::LmrInfo l;
    if (!ia->iface->mr->lmr_query(seg[i].lmr_context, &l))
      return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
    const uint64_t va = seg[i].virtual_address, len = seg[i].segment_length;
    if (va < l.va || len > l.length || va - l.va > l.length - len)
      return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  }
  // x86 is cache coherent for DMA-less software RDMA: a full fence orders the
  // consumer's stores before the engine's later loads (and vice versa).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return DAT_SUCCESS;
}

}  // namespace

extern "C" {

// =========================================================================== IA

DAT_RETURN dat_ia_openv(const DAT_NAME_PTR name, DAT_COUNT async_qlen, DAT_EVD_HANDLE* async_evd,
                        DAT_IA_HANDLE* ia_out, DAT_UINT32 major, DAT_UINT32 minor,
                        DAT_BOOLEAN thread_safety) {
  (void)minor;
  (void)thread_safety;
  if (name == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG1);
  if (async_evd == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (ia_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  if (major != DAT_VERSION_MAJOR) return err(Type::PROVIDER_NOT_FOUND);
  IfaceConfig cfg;
  std::string why;
  if (!lookup_ia(name, &cfg, &why)) return err(Type::PROVIDER_NOT_FOUND);
  Iface* f = nullptr;
  Status st = Iface::get(cfg, &f, &why);
  if (!st.ok()) return to_dat(st);
  Evd* given = nullptr;
  if (*async_evd != DAT_HANDLE_NULL) {
    given = lookup<Evd>(*async_evd, HandleType::kEvd);
    if (given == nullptr || (given->flags & evd_flag::kAsync) == 0)
      return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_ASYNC);
  } else if (async_qlen <= 0) {
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  }
  Lock lk(f->mu);
  auto* ia = new Ia();
  ia->iface = f;
  fill_sa(ia->local_sa, f->cfg.ip);
  register_handle(ia);
  if (given != nullptr) {
    ia->async_evd = given;
  } else {
    Evd* e = nullptr;
    st = make_evd(ia, async_qlen, nullptr, evd_flag::kAsync, &e);
    if (!st.ok()) {
      unregister_handle(ia);
      delete ia;
      return to_dat(st);
    }
    ia->async_evd = e;
    ia->async_evd_created = true;
    *async_evd = e;
  }
  f->ias++;
  *ia_out = ia;
  return DAT_SUCCESS;
}

DAT_RETURN dat_ia_close(DAT_IA_HANDLE h, DAT_CLOSE_FLAGS flags) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Iface* f = ia->iface;
  Lock lk(f->mu);
  if (flags == DAT_CLOSE_GRACEFUL_FLAG) {
    for (Object* o : ia->children)
      if (!(ia->async_evd_created && o == ia->async_evd))
        return err(Type::INVALID_STATE, Sub::INVALID_STATE_IA_IN_USE);
  }
  free_children(ia);
  f->ias--;
  unregister_handle(ia);
  delete ia;
  return DAT_SUCCESS;
}

DAT_RETURN dat_ia_query(DAT_IA_HANDLE h, DAT_EVD_HANDLE* async_evd, DAT_IA_ATTR_MASK ia_mask,
                        DAT_IA_ATTR* ia_attr, DAT_PROVIDER_ATTR_MASK pr_mask,
                        DAT_PROVIDER_ATTR* pr_attr) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (ia_mask != 0 && ia_attr == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  if (pr_mask != 0 && pr_attr == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  Iface* f = ia->iface;
  Lock lk(f->mu);
  if (async_evd != nullptr) *async_evd = ia->async_evd;
  const Limits& L = f->limits;
  if (ia_attr != nullptr && ia_mask != 0) {
    DAT_IA_ATTR& a = *ia_attr;
    std::memset(&a, 0, sizeof(a));
    std::snprintf(a.adapter_name, sizeof(a.adapter_name), "dpdat:%s", f->cfg.name.c_str());
    std::snprintf(a.vendor_name, sizeof(a.vendor_name), "dpdat");
    a.hardware_version_major = 0;
    a.firmware_version_major = 0;
    a.ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(ia->local_sa);
    a.max_eps = static_cast<DAT_COUNT>(L.max_eps);
    a.max_dto_per_ep = static_cast<DAT_COUNT>(L.max_dto_per_ep);
    a.max_rdma_read_per_ep_in = static_cast<DAT_COUNT>(L.max_rdma_read_per_ep);
    a.max_rdma_read_per_ep_out = static_cast<DAT_COUNT>(L.max_rdma_read_per_ep);
    a.max_evds = static_cast<DAT_COUNT>(L.max_evds);
    a.max_evd_qlen = static_cast<DAT_COUNT>(L.max_evd_qlen);
    a.max_iov_segments_per_dto = static_cast<DAT_COUNT>(L.max_iov);
    a.max_lmrs = static_cast<DAT_COUNT>(L.max_lmrs);
    a.max_lmr_block_size = L.max_lmr_size;
    a.max_lmr_virtual_address = UINT64_MAX;
    a.max_pzs = static_cast<DAT_COUNT>(L.max_pzs);
    a.max_message_size = L.max_message_size;
    a.max_rdma_size = L.max_message_size;
    a.max_rmrs = static_cast<DAT_COUNT>(L.max_rmrs);
    a.max_rmr_target_address = UINT64_MAX;
    a.max_srqs = 0;
    a.max_iov_segments_per_rdma_read = static_cast<DAT_COUNT>(L.max_iov);
    a.max_iov_segments_per_rdma_write = static_cast<DAT_COUNT>(L.max_iov);
    a.max_rdma_read_in = static_cast<DAT_COUNT>(L.max_rdma_read_per_ep);
    a.max_rdma_read_out = static_cast<DAT_COUNT>(L.max_rdma_read_per_ep);
    a.max_rdma_read_per_ep_in_guaranteed = DAT_TRUE;
    a.max_rdma_read_per_ep_out_guaranteed = DAT_TRUE;
  }
  if (pr_attr != nullptr && pr_mask != 0) {
    DAT_PROVIDER_ATTR& p = *pr_attr;
    std::memset(&p, 0, sizeof(p));
    std::snprintf(p.provider_name, sizeof(p.provider_name), "dpdat");
    p.provider_version_major = 0;
    p.provider_version_minor = 1;
    p.dapl_version_major = DAT_VERSION_MAJOR;
    p.dapl_version_minor = DAT_VERSION_MINOR;
    p.lmr_mem_types_supported = static_cast<DAT_MEM_TYPE>(DAT_MEM_TYPE_VIRTUAL | DAT_MEM_TYPE_LMR |
                                                          DAT_MEM_TYPE_SHARED_VIRTUAL);
    p.iov_ownership_on_return = DAT_IOV_CONSUMER;
    p.dat_qos_supported = DAT_QOS_BEST_EFFORT;
    p.completion_flags_supported = static_cast<DAT_COMPLETION_FLAGS>(0x1F);
    p.is_thread_safe = DAT_TRUE;
    p.max_private_data_size = static_cast<DAT_COUNT>(L.max_cm_pdata);
    p.supports_multipath = DAT_FALSE;
    p.ep_creator = DAT_PSP_CREATES_EP_IFASKED;
    p.pz_support = DAT_PZ_UNIQUE;
    p.optimal_buffer_alignment = 64;
    for (auto& row : p.evd_stream_merging_supported)
      for (auto& v : row) v = DAT_TRUE;
    p.srq_supported = DAT_FALSE;
    p.lmr_sync_req = DAT_FALSE;
    p.dto_async_return_guaranteed = DAT_TRUE;
    p.rdma_write_for_rdma_read_req = DAT_FALSE;
  }
  return DAT_SUCCESS;
}

DAT_RETURN dat_set_consumer_context(DAT_HANDLE h, DAT_CONTEXT ctx) {
  Object* o = lookup_any(h);
  if (o == nullptr) return err(Type::INVALID_HANDLE);
  Lock lk(o->ia->iface->mu);
  o->context = ctx.as_64;
  o->context_set = true;
  return DAT_SUCCESS;
}

DAT_RETURN dat_get_consumer_context(DAT_HANDLE h, DAT_CONTEXT* ctx) {
  Object* o = lookup_any(h);
  if (o == nullptr) return err(Type::INVALID_HANDLE);
  if (ctx == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Lock lk(o->ia->iface->mu);
  ctx->as_64 = o->context_set ? o->context : 0;
  return DAT_SUCCESS;
}

DAT_RETURN dat_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE* type) {
  Object* o = lookup_any(h);
  if (o == nullptr) return err(Type::INVALID_HANDLE);
  if (type == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  switch (o->type) {
    case HandleType::kIa:
      *type = DAT_HANDLE_TYPE_IA;
      break;
    case HandleType::kEp:
      *type = DAT_HANDLE_TYPE_EP;
      break;
    case HandleType::kLmr:
      *type = DAT_HANDLE_TYPE_LMR;
      break;
    case HandleType::kRmr:
      *type = DAT_HANDLE_TYPE_RMR;
      break;
    case HandleType::kPz:
      *type = DAT_HANDLE_TYPE_PZ;
      break;
    case HandleType::kPsp:
      *type = DAT_HANDLE_TYPE_PSP;
      break;
    case HandleType::kRsp:
      *type = DAT_HANDLE_TYPE_RSP;
      break;
    case HandleType::kCr:
      *type = DAT_HANDLE_TYPE_CR;
      break;
    case HandleType::kCno:
      *type = DAT_HANDLE_TYPE_CNO;
      break;
    case HandleType::kEvd:
      *type = DAT_HANDLE_TYPE_EVD;
      break;
    case HandleType::kSrq:
      *type = DAT_HANDLE_TYPE_SRQ;
      break;
  }
  return DAT_SUCCESS;
}

DAT_RETURN dat_registry_list_providers(DAT_COUNT max, DAT_COUNT* returned,
                                       DAT_PROVIDER_INFO*(list[])) {
  if (returned == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  const std::vector<std::string> names = list_ia_names();
  if (max <= 0 || list == nullptr) {
    *returned = static_cast<DAT_COUNT>(names.size());
    if (max < 0) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG1);
    return DAT_SUCCESS;
  }
  DAT_COUNT n = 0;
  for (const std::string& nm : names) {
    if (n >= max) break;
    DAT_PROVIDER_INFO* p = list[n];
    if (p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
    std::memset(p, 0, sizeof(*p));
    std::snprintf(p->ia_name, sizeof(p->ia_name), "%s", nm.c_str());
    p->dapl_version_major = DAT_VERSION_MAJOR;
    p->dapl_version_minor = DAT_VERSION_MINOR;
    p->is_thread_safe = DAT_TRUE;
    ++n;
  }
  *returned = n;
  return DAT_SUCCESS;
}

DAT_RETURN dat_strerror(DAT_RETURN v, const char** major, const char** minor) {
  if (major == nullptr || minor == nullptr) return err(Type::INVALID_PARAMETER);
  const uint32_t type = DAT_GET_TYPE(v);
  const uint32_t sub = DAT_GET_SUBTYPE(v);
  const char* mj = nullptr;
  const char* mn = nullptr;
#define DPDAT_NAME_TYPE(n) \
  if (mj == nullptr && type == static_cast<uint32_t>(DAT_##n)) mj = "DAT_" #n;
  DPDAT_RETURN_TYPES(DPDAT_NAME_TYPE)
#undef DPDAT_NAME_TYPE
#define DPDAT_NAME_SUB(n) \
  if (mn == nullptr && sub == static_cast<uint32_t>(DAT_##n)) mn = "DAT_" #n;
  DPDAT_RETURN_SUBTYPES(DPDAT_NAME_SUB)
#undef DPDAT_NAME_SUB
  if (mj == nullptr || mn == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG1);
  *major = mj;
  *minor = mn;
  return DAT_SUCCESS;
}

// =========================================================================== PZ

DAT_RETURN dat_pz_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Lock lk(ia->iface->mu);
  auto* pz = new Pz(ia);
  pz->id = ia->iface->next_pz++;
  adopt(ia, pz);
  *out = pz;
  return DAT_SUCCESS;
}

DAT_RETURN dat_pz_query(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM* p) {
  Pz* pz = lookup<Pz>(h, HandleType::kPz);
  if (pz == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p != nullptr) p->ia_handle = pz->ia;
  return DAT_SUCCESS;
}

DAT_RETURN dat_pz_free(DAT_PZ_HANDLE h) {
  Pz* pz = lookup<Pz>(h, HandleType::kPz);
  if (pz == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  Lock lk(pz->ia->iface->mu);
  if (pz->refs > 0) return err(Type::INVALID_STATE, Sub::INVALID_STATE_PZ_IN_USE);
  destroy(pz);
  return DAT_SUCCESS;
}

// ========================================================================== EVD

DAT_RETURN dat_evd_create(DAT_IA_HANDLE h, DAT_COUNT qlen, DAT_CNO_HANDLE cno_h,
                          DAT_EVD_FLAGS flags, DAT_EVD_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  Cno* cno = nullptr;
  if (cno_h != DAT_HANDLE_NULL) {
    cno = lookup<Cno>(cno_h, HandleType::kCno);
    if (cno == nullptr || cno->ia != ia) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  }
  Lock lk(ia->iface->mu);
  Evd* e = nullptr;
  Status st = make_evd(ia, qlen, cno, static_cast<uint32_t>(flags), &e);
  if (!st.ok()) return to_dat(st);
  *out = e;
  return DAT_SUCCESS;
}

DAT_RETURN dat_evd_query(DAT_EVD_HANDLE h, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM* p) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(e->ia->iface->mu);
  p->ia_handle = e->ia;
  p->evd_qlen = static_cast<DAT_COUNT>(e->qlen);
  p->evd_state =
      static_cast<DAT_EVD_STATE>((e->enabled ? DAT_EVD_STATE_ENABLED : DAT_EVD_STATE_DISABLED) |
                                 (e->waitable ? DAT_EVD_STATE_WAITABLE : DAT_EVD_STATE_UNWAITABLE));
  p->cno_handle = e->cno;
  p->evd_flags = static_cast<DAT_EVD_FLAGS>(e->flags);
  return DAT_SUCCESS;
}

DAT_RETURN dat_evd_modify_cno(DAT_EVD_HANDLE h, DAT_CNO_HANDLE cno_h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  Cno* cno = nullptr;
  if (cno_h != DAT_HANDLE_NULL) {
    cno = lookup<Cno>(cno_h, HandleType::kCno);
    if (cno == nullptr || cno->ia != e->ia)
      return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  }
  Lock lk(e->ia->iface->mu);
  if (e->cno != nullptr) e->cno->evds--;
  e->cno = cno;
  if (cno != nullptr) cno->evds++;
  return DAT_SUCCESS;
}

DAT_RETURN dat_evd_enable(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  Lock lk(e->ia->iface->mu);
  e->enabled = true;
  return DAT_SUCCESS;
}

DAT_RETURN dat_evd_disable(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  Lock lk(e->ia->iface->mu);
  e->enabled = false;
  return DAT_SUCCESS;
}

DAT_RETURN dat_evd_set_unwaitable(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  Lock lk(e->ia->iface->mu);
  e->waitable = false;
  e->cv.notify_all();  // a waiter returns DAT_INVALID_STATE
  return DAT_SUCCESS;
}

DAT_RETURN dat_evd_clear_unwaitable(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  Lock lk(e->ia->iface->mu);
  e->waitable = true;
  return DAT_SUCCESS;
}

DAT_RETURN dat_evd_wait(DAT_EVD_HANDLE h, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                        DAT_EVENT* event, DAT_COUNT* nmore) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  if (event == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Iface* f = e->ia->iface;
  Lock lk(f->mu);
  if (threshold <= 0 || static_cast<uint32_t>(threshold) > e->qlen)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (!e->waitable) return err(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_UNWAITABLE);
  if (!e->enabled) return err(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_DISABLED);
  if (e->waiter) return err(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_WAITER);
  e->waiter = true;
  e->threshold = static_cast<uint32_t>(threshold);
  const bool got =
      wait_for(f, lk, e->cv, timeout, [e] { return !e->waitable || e->q.size() >= e->threshold; });
  e->waiter = false;
  if (!e->waitable) return err(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_UNWAITABLE);
  if (!got) {
    if (nmore != nullptr) *nmore = static_cast<DAT_COUNT>(e->q.size());
    return err(Type::TIMEOUT_EXPIRED);
  }
  pop_event(e, event);
  if (nmore != nullptr) *nmore = static_cast<DAT_COUNT>(e->q.size());
  return DAT_SUCCESS;
}

DAT_RETURN dat_evd_dequeue(DAT_EVD_HANDLE h, DAT_EVENT* event) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  if (event == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Iface* f = e->ia->iface;
  Lock lk(f->mu);
  if (e->q.empty()) f->progress(now_ns(), true);
  if (!pop_event(e, event)) return err(Type::QUEUE_EMPTY);
  return DAT_SUCCESS;
}

DAT_RETURN dat_evd_resize(DAT_EVD_HANDLE h, DAT_COUNT qlen) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  Lock lk(e->ia->iface->mu);
  if (qlen <= 0 || static_cast<uint32_t>(qlen) > e->ia->iface->limits.max_evd_qlen)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (static_cast<size_t>(qlen) < e->q.size() + e->overflow.size()) return err(Type::INVALID_STATE);
  // The RC completion queue only stages completions before they become
  // events (drained while the EVD has room), so the EVD's length changes
  // without it.  Queue pairs point at it: it is re-sized only when no
  // endpoint feeds this EVD.
  bool fed = false;
  for (auto& [qpn, ep] : e->ia->iface->ep_by_qpn) fed |= ep->req_evd == e || ep->recv_evd == e;
  if (e->cq && !fed) {
    dpdat::rc::Completion c;
    std::vector<dpdat::rc::Completion> held;
    while (e->cq->pop(&c)) held.push_back(c);
    e->cq = std::make_unique<dpdat::rc::CompletionQueue>(
        std::max<size_t>(static_cast<size_t>(qlen), held.size()));
    for (const auto& x : held) (void)e->cq->push(x);
  }
  e->qlen = static_cast<uint32_t>(qlen);
  e->overflow_reported = false;
  return DAT_SUCCESS;
}

DAT_RETURN dat_evd_post_se(DAT_EVD_HANDLE h, const DAT_EVENT* event) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  if (event == nullptr || event->event_number != DAT_SOFTWARE_EVENT)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Lock lk(e->ia->iface->mu);
  if ((e->flags & evd_flag::kSoftware) == 0) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG1);
  if (e->q.size() >= e->qlen) return err(Type::QUEUE_FULL);
  Event ev;
  ev.num = EventNum::kSoftware;
  ev.evd = e;
  ev.sw_pointer = event->event_data.software_event_data.pointer;
  e->ia->iface->deliver(e, ev);
  return DAT_SUCCESS;
}

DAT_RETURN dat_evd_free(DAT_EVD_HANDLE h) {
  Evd* e = lookup<Evd>(h, HandleType::kEvd);
  if (e == nullptr) return err(Type::INVALID_HANDLE);
  Lock lk(e->ia->iface->mu);
  if (e->refs > 0 || e->waiter) return err(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_IN_USE);
  if (e->ia->async_evd == e) return err(Type::INVALID_STATE, Sub::INVALID_STATE_EVD_IN_USE);
  free_evd(e);
  return DAT_SUCCESS;
}

// ========================================================================== CNO

DAT_RETURN dat_cno_create(DAT_IA_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  Lock lk(ia->iface->mu);
  auto* c = new Cno(ia);
  c->agent_instance = agent.instance_data;
  c->agent_fn = reinterpret_cast<void (*)(void*, void*)>(agent.proxy_agent_func);
  adopt(ia, c);
  *out = c;
  return DAT_SUCCESS;
}

DAT_RETURN dat_cno_modify_agent(DAT_CNO_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  Lock lk(c->ia->iface->mu);
  c->agent_instance = agent.instance_data;
  c->agent_fn = reinterpret_cast<void (*)(void*, void*)>(agent.proxy_agent_func);
  return DAT_SUCCESS;
}

DAT_RETURN dat_cno_query(DAT_CNO_HANDLE h, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM* p) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(c->ia->iface->mu);
  p->ia_handle = c->ia;
  p->agent.instance_data = c->agent_instance;
  p->agent.proxy_agent_func = reinterpret_cast<DAT_AGENT_FUNC>(c->agent_fn);
  return DAT_SUCCESS;
}

DAT_RETURN dat_cno_wait(DAT_CNO_HANDLE h, DAT_TIMEOUT timeout, DAT_EVD_HANDLE* evd_out) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  if (evd_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  Iface* f = c->ia->iface;
  Lock lk(f->mu);
  if (c->waiter) return err(Type::INVALID_STATE, Sub::INVALID_STATE_CNO_IN_USE);
  // An EVD of this CNO that already holds events triggers it at once.
  if (c->triggered == nullptr)
    for (Object* o : c->ia->children)
      if (o->type == HandleType::kEvd) {
        auto* e = static_cast<Evd*>(o);
        if (e->cno == c && e->enabled && !e->waiter && !e->q.empty()) {
          c->triggered = e;
          break;
        }
      }
  c->waiter = true;
  const bool got = wait_for(f, lk, c->cv, timeout, [c] { return c->triggered != nullptr; });
  c->waiter = false;
  if (!got) return err(Type::TIMEOUT_EXPIRED);
  *evd_out = c->triggered;
  c->triggered = nullptr;
  return DAT_SUCCESS;
}

DAT_RETURN dat_cno_free(DAT_CNO_HANDLE h) {
  Cno* c = lookup<Cno>(h, HandleType::kCno);
  if (c == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CNO);
  Lock lk(c->ia->iface->mu);
  if (c->evds > 0 || c->waiter) return err(Type::INVALID_STATE, Sub::INVALID_STATE_CNO_IN_USE);
  destroy(c);
  return DAT_SUCCESS;
}

// =========================================================================== EP

static DAT_RETURN ep_create_common(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz_h, DAT_EVD_HANDLE recv_h,
                                   DAT_EVD_HANDLE req_h, DAT_EVD_HANDLE conn_h,
                                   const DAT_EP_ATTR* attr, DAT_EP_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG7);
  Pz* pz = lookup<Pz>(pz_h, HandleType::kPz);
  if (pz == nullptr || pz->ia->iface != ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  Evd *recv = nullptr, *req = nullptr, *conn = nullptr;
  if (!evd_ok(ia, recv_h, evd_flag::kDto, &recv))
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_RECV);
  if (!evd_ok(ia, req_h, evd_flag::kDto | evd_flag::kRmrBind, &req))
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_REQUEST);
  if (!evd_ok(ia, conn_h, evd_flag::kConnection, &conn))
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_CONN);
  Iface* f = ia->iface;
  Lock lk(f->mu);
  auto* ep = new Ep(ia);
  if (attr != nullptr) {
    Status st = check_ep_attr(f, *attr);
    if (!st.ok()) {
      delete ep;
      return to_dat(st);
    }
    ep->attr = from_dat(*attr);
  }
  ep->pz = pz;
  ep->recv_evd = recv;
  ep->req_evd = req;
  ep->conn_evd = conn;
  Status st = f->make_qp(ep);
  if (!st.ok()) {
    delete ep;
    return to_dat(st);
  }
  pz->refs++;
  for (Evd* e : {recv, req, conn})
    if (e != nullptr) e->refs++;
  adopt(ia, ep);
  *out = ep;
  return DAT_SUCCESS;
}

DAT_RETURN dat_ep_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv, DAT_EVD_HANDLE req,
                         DAT_EVD_HANDLE conn, const DAT_EP_ATTR* attr, DAT_EP_HANDLE* out) {
  return ep_create_common(h, pz, recv, req, conn, attr, out);
}

DAT_RETURN dat_ep_create_with_srq(DAT_IA_HANDLE h, DAT_PZ_HANDLE, DAT_EVD_HANDLE, DAT_EVD_HANDLE,
                                  DAT_EVD_HANDLE, DAT_SRQ_HANDLE, const DAT_EP_ATTR*,
                                  DAT_EP_HANDLE*) {
  if (lookup<Ia>(h, HandleType::kIa) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  return err(Type::MODEL_NOT_SUPPORTED);  // srq_supported = DAT_FALSE (dat_ia_query)
}

DAT_RETURN dat_ep_query(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM* p) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(ep->ia->iface->mu);
  std::memset(p, 0, sizeof(*p));
  p->ia_handle = ep->ia;
  p->ep_state = to_dat(ep->state);
  p->local_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(ep->ia->local_sa);
  p->local_port_qual = ep->qp != nullptr ? ep->qp->qpn() : 0;
  fill_sa(ep->remote_sa, ep->peer_ip);
  p->remote_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(ep->remote_sa);
  p->remote_port_qual = ep->conn_qual;
  p->pz_handle = ep->pz;
  p->recv_evd_handle = ep->recv_evd;
  p->request_evd_handle = ep->req_evd;
  p->connect_evd_handle = ep->conn_evd;
  p->srq_handle = DAT_HANDLE_NULL;
  to_dat(ep->attr, &p->ep_attr);
  return DAT_SUCCESS;
}

DAT_RETURN dat_ep_modify(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM* p) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  constexpr DAT_EP_PARAM_MASK kModifiable =
      DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE | DAT_EP_FIELD_REQUEST_EVD_HANDLE |
      DAT_EP_FIELD_CONNECT_EVD_HANDLE | DAT_EP_FIELD_EP_ATTR_ALL;
  if ((mask & ~kModifiable) != 0) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Iface* f = ep->ia->iface;
  Lock lk(f->mu);
  if (ep->state != EpState::kUnconnected && ep->state != EpState::kTentativePending &&
      ep->state != EpState::kReserved)
    return err(Type::INVALID_STATE, ep_state_sub(ep->state));
  Pz* pz = ep->pz;
  Evd *recv = ep->recv_evd, *req = ep->req_evd, *conn = ep->conn_evd;
  if ((mask & DAT_EP_FIELD_PZ_HANDLE) != 0) {
    pz = lookup<Pz>(p->pz_handle, HandleType::kPz);
    if (pz == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  }
  if ((mask & DAT_EP_FIELD_RECV_EVD_HANDLE) != 0 &&
      !evd_ok(ep->ia, p->recv_evd_handle, evd_flag::kDto, &recv))
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_RECV);
  if ((mask & DAT_EP_FIELD_REQUEST_EVD_HANDLE) != 0 &&
      !evd_ok(ep->ia, p->request_evd_handle, evd_flag::kDto | evd_flag::kRmrBind, &req))
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_REQUEST);
  if ((mask & DAT_EP_FIELD_CONNECT_EVD_HANDLE) != 0 &&
      !evd_ok(ep->ia, p->connect_evd_handle, evd_flag::kConnection, &conn))
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_CONN);
  EpAttr attr = ep->attr;
  if ((mask & DAT_EP_FIELD_EP_ATTR_ALL) != 0) {
    DAT_EP_ATTR a;
    to_dat(ep->attr, &a);
    const DAT_EP_ATTR& n = p->ep_attr;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE) a.max_message_size = n.max_message_size;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE) a.max_rdma_size = n.max_rdma_size;
    if (mask & DAT_EP_FIELD_EP_ATTR_QOS) a.qos = n.qos;
    if (mask & DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS)
      a.recv_completion_flags = n.recv_completion_flags;
    if (mask & DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS)
      a.request_completion_flags = n.request_completion_flags;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS) a.max_recv_dtos = n.max_recv_dtos;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS) a.max_request_dtos = n.max_request_dtos;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV) a.max_recv_iov = n.max_recv_iov;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV) a.max_request_iov = n.max_request_iov;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN) a.max_rdma_read_in = n.max_rdma_read_in;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT) a.max_rdma_read_out = n.max_rdma_read_out;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV) a.max_rdma_read_iov = n.max_rdma_read_iov;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV) a.max_rdma_write_iov = n.max_rdma_write_iov;
    Status st = check_ep_attr(f, a);
    if (!st.ok()) return to_dat(st);
    attr = from_dat(a);
  }
  // Re-create the queue pair with the new settings (nothing is connected
  // yet; receives already posted would be lost, so refuse then).
  if (ep->qp != nullptr && ep->qp->recv_queue_used() > 0)
    return err(Type::INVALID_STATE, Sub::INVALID_STATE_EP_NOTREADY);
  f->destroy_qp(ep);
  if (pz != ep->pz) {
    if (ep->pz != nullptr) ep->pz->refs--;
    pz->refs++;
  }
  for (Evd* e : {ep->recv_evd, ep->req_evd, ep->conn_evd})
    if (e != nullptr) e->refs--;
  for (Evd* e : {recv, req, conn})
    if (e != nullptr) e->refs++;
  ep->pz = pz;
  ep->recv_evd = recv;
  ep->req_evd = req;
  ep->conn_evd = conn;
  ep->attr = attr;
  return to_dat(f->make_qp(ep));
}

DAT_RETURN dat_ep_connect(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
                          DAT_TIMEOUT timeout, DAT_COUNT pdata_size, const DAT_PVOID pdata,
                          DAT_QOS qos, DAT_CONNECT_FLAGS flags) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (addr == nullptr) return err(Type::INVALID_ADDRESS, Sub::INVALID_ADDRESS_MALFORMED);
  if (addr->sa_family != AF_INET)
    return err(Type::INVALID_ADDRESS, Sub::INVALID_ADDRESS_UNSUPPORTED);
  if (pdata_size < 0 || (pdata_size > 0 && pdata == nullptr))
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  if ((static_cast<uint32_t>(qos) & ~0x0Fu) != 0)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG7);
  if (flags != DAT_CONNECT_DEFAULT_FLAG && flags != DAT_CONNECT_MULTIPATH_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG8);
  sockaddr_in sin{};
  std::memcpy(&sin, addr, sizeof(sin));
  const uint32_t ip = ntohl(sin.sin_addr.s_addr);
  if (ip == 0 || ip == 0xFFFFFFFFu)
    return err(Type::INVALID_ADDRESS, Sub::INVALID_ADDRESS_UNSUPPORTED);
  Iface* f = ep->ia->iface;
  Lock lk(f->mu);
  if (ep->state != EpState::kUnconnected) return err(Type::INVALID_STATE, ep_state_sub(ep->state));
  if (ep->conn_evd == nullptr) return err(Type::INVALID_STATE, Sub::INVALID_STATE_EP_NOTREADY);
  Status st = f->connect(ep, ip, qual, timeout == DAT_TIMEOUT_INFINITE ? UINT64_MAX : timeout,
                         static_cast<const uint8_t*>(pdata), static_cast<uint32_t>(pdata_size));
  if (st.ok()) f->progress(now_ns(), true);
  return to_dat(st);
}

DAT_RETURN dat_ep_dup_connect(DAT_EP_HANDLE h, DAT_EP_HANDLE dup, DAT_TIMEOUT timeout,
                              DAT_COUNT pdata_size, const DAT_PVOID pdata, DAT_QOS qos) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  Ep* src = lookup<Ep>(dup, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (src == nullptr || src->ia->iface != ep->ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  uint32_t ip = 0;
  uint64_t qual = 0;
  {
    Lock lk(ep->ia->iface->mu);
    if (src->state != EpState::kConnected)
      return err(Type::INVALID_STATE, ep_state_sub(src->state));
    ip = src->peer_ip;
    qual = src->conn_qual;
  }
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(ip);
  return dat_ep_connect(h, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sin), qual, timeout, pdata_size,
                        pdata, qos, DAT_CONNECT_DEFAULT_FLAG);
}

DAT_RETURN dat_ep_disconnect(DAT_EP_HANDLE h, DAT_CLOSE_FLAGS flags) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Iface* f = ep->ia->iface;
  Lock lk(f->mu);
  Status st = f->disconnect(ep, flags == DAT_CLOSE_ABRUPT_FLAG);
  if (st.ok()) f->progress(now_ns(), true);
  return to_dat(st);
}

DAT_RETURN dat_ep_post_send(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                            DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
  return post_send_like(h, n, iov, cookie, nullptr, flags, dpdat::rc::WrOp::kSend);
}

DAT_RETURN dat_ep_post_rdma_write(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                                  DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote,
                                  DAT_COMPLETION_FLAGS flags) {
  if (remote == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  return post_send_like(h, n, iov, cookie, remote, flags, dpdat::rc::WrOp::kWrite);
}

DAT_RETURN dat_ep_post_rdma_read(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                                 DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote,
                                 DAT_COMPLETION_FLAGS flags) {
  if (remote == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  return post_send_like(h, n, iov, cookie, remote, flags, dpdat::rc::WrOp::kRead);
}

DAT_RETURN dat_ep_post_recv(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET* iov,
                            DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if ((static_cast<uint32_t>(flags) & ~0x1Fu) != 0)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  Iface* f = ep->ia->iface;
  Lock lk(f->mu);
  if (ep->qp == nullptr || ep->state == EpState::kDisconnected)
    return err(Type::INVALID_STATE, ep_state_sub(ep->state));
  dpdat::rc::RecvWr wr;
  wr.cookie = cookie.as_64;
  uint64_t total = 0;
  Status st = fill_sges(ep, n, iov, ep->attr.max_recv_iov, wr.sge, &wr.num_sge, &total);
  if (!st.ok()) return to_dat(st);
  return to_dat(post_result(f, ep->qp->post_recv(wr), ep));
}

DAT_RETURN dat_ep_get_status(DAT_EP_HANDLE h, DAT_EP_STATE* state, DAT_BOOLEAN* recv_idle,
                             DAT_BOOLEAN* req_idle) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  Iface* f = ep->ia->iface;
  Lock lk(f->mu);
  f->progress(now_ns(), true);
  if (state != nullptr) *state = to_dat(ep->state);
  if (recv_idle != nullptr)
    *recv_idle = ep->qp == nullptr || ep->qp->recv_queue_used() == 0 ? DAT_TRUE : DAT_FALSE;
  if (req_idle != nullptr)
    *req_idle = ep->qp == nullptr || ep->qp->send_queue_used() == 0 ? DAT_TRUE : DAT_FALSE;
  return DAT_SUCCESS;
}

DAT_RETURN dat_ep_reset(DAT_EP_HANDLE h) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  Iface* f = ep->ia->iface;
  Lock lk(f->mu);
  if (ep->state == EpState::kUnconnected) return DAT_SUCCESS;
  if (ep->state != EpState::kDisconnected) return err(Type::INVALID_STATE, ep_state_sub(ep->state));
  f->drop_ep(ep);
  f->destroy_qp(ep);
  ep->cm = CmState::kIdle;
  ep->local_comm = ep->remote_comm = 0;
  ep->peer_ip = 0;
  ep->state = EpState::kUnconnected;
  return to_dat(f->make_qp(ep));
}

DAT_RETURN dat_ep_free(DAT_EP_HANDLE h) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  Lock lk(ep->ia->iface->mu);
  if (ep->state == EpState::kReserved)
    return err(Type::INVALID_STATE, Sub::INVALID_STATE_EP_RESERVED);
  free_ep(ep);
  return DAT_SUCCESS;
}

DAT_RETURN dat_ep_recv_query(DAT_EP_HANDLE h, DAT_COUNT* nbufs, DAT_COUNT* span) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  Lock lk(ep->ia->iface->mu);
  const DAT_COUNT n = ep->qp == nullptr ? 0 : static_cast<DAT_COUNT>(ep->qp->recv_queue_used());
  if (nbufs != nullptr) *nbufs = n;
  if (span != nullptr) *span = n;  // receives are consumed in order: the span is the count
  return DAT_SUCCESS;
}

DAT_RETURN dat_ep_set_watermark(DAT_EP_HANDLE h, DAT_COUNT soft_hw, DAT_COUNT hard_hw) {
  Ep* ep = lookup<Ep>(h, HandleType::kEp);
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  Lock lk(ep->ia->iface->mu);
  ep->recv_watermark = static_cast<uint32_t>(soft_hw);
  ep->send_watermark = static_cast<uint32_t>(hard_hw);
  return DAT_SUCCESS;
}

// ==================================================================== PSP / RSP

static DAT_RETURN sp_listen(Ia* ia, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd_h, HandleType t,
                            uint32_t flags, Ep* ep, Sp** out) {
  Evd* evd = lookup<Evd>(evd_h, HandleType::kEvd);
  if (evd == nullptr || evd->ia->iface != ia->iface || (evd->flags & evd_flag::kCr) == 0)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EVD_CR);
  Iface* f = ia->iface;
  if (f->listeners.count(qual) != 0) return err(Type::CONN_QUAL_IN_USE);
  auto* sp = new Sp(t, ia);
  sp->conn_qual = qual;
  sp->evd = evd;
  sp->flags = flags;
  sp->ep = ep;
  evd->refs++;
  f->listeners[qual] = sp;
  adopt(ia, sp);
  *out = sp;
  return DAT_SUCCESS;
}

DAT_RETURN dat_psp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd,
                          DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Lock lk(ia->iface->mu);
  Sp* sp = nullptr;
  const DAT_RETURN r =
      sp_listen(ia, qual, evd, HandleType::kPsp, static_cast<uint32_t>(flags), nullptr, &sp);
  if (r == DAT_SUCCESS) *out = sp;
  return r;
}

DAT_RETURN dat_psp_create_any(DAT_IA_HANDLE h, DAT_CONN_QUAL* qual, DAT_EVD_HANDLE evd,
                              DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  if (qual == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Lock lk(ia->iface->mu);
  DAT_CONN_QUAL q = 0x10000;  // above the range consumers usually pick by hand
  while (ia->iface->listeners.count(q) != 0) ++q;
  Sp* sp = nullptr;
  const DAT_RETURN r =
      sp_listen(ia, q, evd, HandleType::kPsp, static_cast<uint32_t>(flags), nullptr, &sp);
  if (r == DAT_SUCCESS) {
    *qual = q;
    *out = sp;
  }
  return r;
}

DAT_RETURN dat_psp_query(DAT_PSP_HANDLE h, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM* p) {
  Sp* sp = lookup<Sp>(h, HandleType::kPsp);
  if (sp == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PSP);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(sp->ia->iface->mu);
  p->ia_handle = sp->ia;
  p->conn_qual = sp->conn_qual;
  p->evd_handle = sp->evd;
  p->psp_flags = static_cast<DAT_PSP_FLAGS>(sp->flags);
  return DAT_SUCCESS;
}

DAT_RETURN dat_psp_free(DAT_PSP_HANDLE h) {
  Sp* sp = lookup<Sp>(h, HandleType::kPsp);
  if (sp == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PSP);
  Lock lk(sp->ia->iface->mu);
  free_sp(sp);
  return DAT_SUCCESS;
}

DAT_RETURN dat_rsp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EP_HANDLE ep_h,
                          DAT_EVD_HANDLE evd, DAT_RSP_HANDLE* out) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  Ep* ep = lookup<Ep>(ep_h, HandleType::kEp);
  if (ep == nullptr || ep->ia->iface != ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG5);
  Lock lk(ia->iface->mu);
  if (ep->state != EpState::kUnconnected) return err(Type::INVALID_STATE, ep_state_sub(ep->state));
  Sp* sp = nullptr;
  const DAT_RETURN r = sp_listen(ia, qual, evd, HandleType::kRsp, 0, ep, &sp);
  if (r != DAT_SUCCESS) return r;
  ep->state = EpState::kReserved;
  ep->sp = sp;
  *out = sp;
  return DAT_SUCCESS;
}

DAT_RETURN dat_rsp_query(DAT_RSP_HANDLE h, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM* p) {
  Sp* sp = lookup<Sp>(h, HandleType::kRsp);
  if (sp == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RSP);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(sp->ia->iface->mu);
  p->ia_handle = sp->ia;
  p->conn_qual = sp->conn_qual;
  p->evd_handle = sp->evd;
  p->ep_handle = sp->ep;
  return DAT_SUCCESS;
}

DAT_RETURN dat_rsp_free(DAT_RSP_HANDLE h) {
  Sp* sp = lookup<Sp>(h, HandleType::kRsp);
  if (sp == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RSP);
  Lock lk(sp->ia->iface->mu);
  free_sp(sp);
  return DAT_SUCCESS;
}

// =========================================================================== CR

DAT_RETURN dat_cr_query(DAT_CR_HANDLE h, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM* p) {
  Cr* cr = lookup<Cr>(h, HandleType::kCr);
  if (cr == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CR);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(cr->ia->iface->mu);
  fill_sa(cr->remote_sa, cr->peer_ip);
  p->remote_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(cr->remote_sa);
  p->remote_port_qual = cr->req.qpn;
  p->private_data_size = static_cast<DAT_COUNT>(cr->pdata.size());
  p->private_data = cr->pdata.empty() ? nullptr : cr->pdata.data();  // writable, as dtest expects
  p->local_ep_handle = cr->ep;
  return DAT_SUCCESS;
}

DAT_RETURN dat_cr_accept(DAT_CR_HANDLE h, DAT_EP_HANDLE ep_h, DAT_COUNT pdata_size,
                         const DAT_PVOID pdata) {
  Cr* cr = lookup<Cr>(h, HandleType::kCr);
  if (cr == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CR);
  if (pdata_size < 0 || (pdata_size > 0 && pdata == nullptr))
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG4);
  Ep* ep = nullptr;
  if (ep_h != DAT_HANDLE_NULL) {
    ep = lookup<Ep>(ep_h, HandleType::kEp);
    if (ep == nullptr || ep->ia->iface != cr->ia->iface)
      return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  }
  Iface* f = cr->ia->iface;
  Lock lk(f->mu);
  if (ep == nullptr) ep = cr->ep;
  if (ep == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  const bool own = ep == cr->ep;
  if (!own && ep->state != EpState::kUnconnected)
    return err(Type::INVALID_STATE, ep_state_sub(ep->state));
  if (ep->conn_evd == nullptr) return err(Type::INVALID_STATE, Sub::INVALID_STATE_EP_NOTREADY);
  if (!own && cr->ep != nullptr && cr->ep->state == EpState::kPassivePending && cr->sp != nullptr &&
      cr->sp->type == HandleType::kRsp)
    cr->ep->state = EpState::kReserved;  // RSP's own EP not used: back to reserved
  Status st =
      f->accept(cr, ep, static_cast<const uint8_t*>(pdata), static_cast<uint32_t>(pdata_size));
  if (st.ok()) f->progress(now_ns(), true);
  return to_dat(st);
}

DAT_RETURN dat_cr_reject(DAT_CR_HANDLE h) {
  Cr* cr = lookup<Cr>(h, HandleType::kCr);
  if (cr == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CR);
  Iface* f = cr->ia->iface;
  Lock lk(f->mu);
  Status st = f->reject(cr, nullptr, 0);
  if (st.ok()) f->progress(now_ns(), true);
  return to_dat(st);
}

DAT_RETURN dat_cr_handoff(DAT_CR_HANDLE h, DAT_CONN_QUAL qual) {
  Cr* cr = lookup<Cr>(h, HandleType::kCr);
  if (cr == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_CR);
  Iface* f = cr->ia->iface;
  Lock lk(f->mu);
  auto it = f->listeners.find(qual);
  if (it == f->listeners.end() || it->second->type != HandleType::kPsp)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Sp* to = it->second;
  if (cr->sp != nullptr && cr->sp->crs > 0) cr->sp->crs--;
  cr->sp = to;
  cr->conn_qual = qual;
  to->crs++;
  Event ev;
  ev.num = EventNum::kConnRequest;
  ev.evd = to->evd;
  ev.sp = to;
  ev.conn_qual = qual;
  ev.cr = cr;
  f->deliver(to->evd, ev);
  return DAT_SUCCESS;
}

// ========================================================================== LMR

DAT_RETURN dat_lmr_create(DAT_IA_HANDLE h, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region,
                          DAT_VLEN length, DAT_PZ_HANDLE pz_h, DAT_MEM_PRIV_FLAGS privs,
                          DAT_LMR_HANDLE* lmr_out, DAT_LMR_CONTEXT* lctx, DAT_RMR_CONTEXT* rctx,
                          DAT_VLEN* reg_size, DAT_VADDR* reg_addr) {
  Ia* ia = lookup<Ia>(h, HandleType::kIa);
  if (ia == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  Pz* pz = lookup<Pz>(pz_h, HandleType::kPz);
  if (pz == nullptr || pz->ia->iface != ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  if (lmr_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG7);
  const uint32_t pv = static_cast<uint32_t>(privs);
  if ((pv & ~static_cast<uint32_t>(DAT_MEM_PRIV_ALL_FLAG)) != 0)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG6);
  Iface* f = ia->iface;
  Lock lk(f->mu);
  auto l = std::make_unique<Lmr>(ia);
  l->pz = pz;
  l->privileges = pv;
  switch (type) {
    case DAT_MEM_TYPE_VIRTUAL:
    case DAT_MEM_TYPE_SO_VIRTUAL:
      if (region.for_va == nullptr && length > 0)
        return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
      l->mem_type = type == DAT_MEM_TYPE_VIRTUAL ? MemType::kVirtual : MemType::kSoVirtual;
      l->host = static_cast<uint8_t*>(region.for_va);
      l->va = reinterpret_cast<uintptr_t>(region.for_va);
      l->length = length;
      break;
    case DAT_MEM_TYPE_SHARED_VIRTUAL:
      if (region.for_shared_memory.virtual_address == nullptr ||
          region.for_shared_memory.shared_memory_id == nullptr)
        return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
      l->mem_type = MemType::kSharedVirtual;
      l->host = static_cast<uint8_t*>(region.for_shared_memory.virtual_address);
      l->va = reinterpret_cast<uintptr_t>(l->host);
      l->length = length;
      // The 40-byte cookie is opaque binary: copied and compared byte for byte.
      std::memcpy(l->cookie.data(), *region.for_shared_memory.shared_memory_id, kCookieSize);
      break;
    case DAT_MEM_TYPE_LMR: {
      Lmr* parent = lookup<Lmr>(region.for_lmr_handle, HandleType::kLmr);
      if (parent == nullptr || parent->ia->iface != f)
        return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_LMR);
      l->mem_type = MemType::kLmr;
      l->parent = parent;
      l->host = parent->host;
      l->va = parent->va;
      l->length = parent->length;
      break;
    }
    default:
      return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  }
  if (l->length > f->limits.max_lmr_size) return err(Type::LENGTH_ERROR);
  if (!f->mr->lmr_register(pz->id, l->host, l->va, l->length, pv, &l->lmr_context))
    return err(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_MEMORY_REGION);
  if ((pv & (DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG)) != 0)
    l->rmr_context = l->lmr_context;  // the LMR's own key doubles as its remote key
  if (l->parent != nullptr) l->parent->children++;
  pz->refs++;
  f->lmr_by_ctx[l->lmr_context] = l.get();
  if (lctx != nullptr) *lctx = l->lmr_context;
  if (rctx != nullptr) *rctx = l->rmr_context;
  if (reg_size != nullptr) *reg_size = l->length;
  if (reg_addr != nullptr) *reg_addr = l->va;
  Lmr* raw = l.release();
  adopt(ia, raw);
  *lmr_out = raw;
  return DAT_SUCCESS;
}

DAT_RETURN dat_lmr_query(DAT_LMR_HANDLE h, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM* p) {
  Lmr* l = lookup<Lmr>(h, HandleType::kLmr);
  if (l == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_LMR);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(l->ia->iface->mu);
  std::memset(p, 0, sizeof(*p));
  p->ia_handle = l->ia;
  p->mem_type = static_cast<DAT_MEM_TYPE>(l->mem_type);
  if (l->mem_type == MemType::kLmr)
    p->region_desc.for_lmr_handle = l->parent;
  else if (l->mem_type == MemType::kSharedVirtual)
    p->region_desc.for_shared_memory.virtual_address = l->host;
  else
    p->region_desc.for_va = l->host;
  p->length = l->length;
  p->pz_handle = l->pz;
  p->mem_priv = static_cast<DAT_MEM_PRIV_FLAGS>(l->privileges);
  p->lmr_context = l->lmr_context;
  p->rmr_context = l->rmr_context;
  p->registered_size = l->length;
  p->registered_address = l->va;
  return DAT_SUCCESS;
}

DAT_RETURN dat_lmr_free(DAT_LMR_HANDLE h) {
  Lmr* l = lookup<Lmr>(h, HandleType::kLmr);
  if (l == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_LMR);
  Lock lk(l->ia->iface->mu);
  return to_dat(free_lmr(l));
}

DAT_RETURN dat_lmr_sync_rdma_read(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET* seg, DAT_VLEN n) {
  return lmr_sync(h, seg, n);
}

DAT_RETURN dat_lmr_sync_rdma_write(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET* seg, DAT_VLEN n) {
  return lmr_sync(h, seg, n);
}

// ========================================================================== RMR

DAT_RETURN dat_rmr_create(DAT_PZ_HANDLE pz_h, DAT_RMR_HANDLE* out) {
  Pz* pz = lookup<Pz>(pz_h, HandleType::kPz);
  if (pz == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_PZ);
  if (out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  Iface* f = pz->ia->iface;
  Lock lk(f->mu);
  auto* r = new Rmr(pz->ia);
  r->pz = pz;
  if (!f->mr->rmr_alloc(pz->id, &r->slot)) {
    delete r;
    return err(Type::INSUFFICIENT_RESOURCES, Sub::RESOURCE_MEMORY_REGION);
  }
  pz->refs++;
  adopt(pz->ia, r);
  *out = r;
  return DAT_SUCCESS;
}

DAT_RETURN dat_rmr_query(DAT_RMR_HANDLE h, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM* p) {
  Rmr* r = lookup<Rmr>(h, HandleType::kRmr);
  if (r == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RMR);
  if (mask != 0 && p == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  if (p == nullptr) return DAT_SUCCESS;
  Lock lk(r->ia->iface->mu);
  std::memset(p, 0, sizeof(*p));
  p->ia_handle = r->ia;
  p->pz_handle = r->pz;
  p->lmr_triplet.lmr_context = r->lmr != nullptr ? r->lmr->lmr_context : 0;
  p->lmr_triplet.virtual_address = r->va;
  p->lmr_triplet.segment_length = r->length;
  p->mem_priv = static_cast<DAT_MEM_PRIV_FLAGS>(r->privileges);
  p->rmr_context = r->context;
  return DAT_SUCCESS;
}

DAT_RETURN dat_rmr_bind(DAT_RMR_HANDLE h, const DAT_LMR_TRIPLET* trip, DAT_MEM_PRIV_FLAGS privs,
                        DAT_EP_HANDLE ep_h, DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                        DAT_RMR_CONTEXT* ctx_out) {
  Rmr* r = lookup<Rmr>(h, HandleType::kRmr);
  if (r == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RMR);
  Ep* ep = lookup<Ep>(ep_h, HandleType::kEp);
  if (ep == nullptr || ep->ia->iface != r->ia->iface)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_EP);
  if (trip == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
  if (ctx_out == nullptr) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG7);
  const uint32_t pv = static_cast<uint32_t>(privs);
  if ((pv &
       ~static_cast<uint32_t>(DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG)) != 0)
    return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG3);
  Iface* f = r->ia->iface;
  Lock lk(f->mu);
  if (ep->state != EpState::kConnected || ep->qp == nullptr)
    return err(Type::INVALID_STATE, ep_state_sub(ep->state));
  if (ep->pz != r->pz) return err(Type::PROTECTION_VIOLATION);
  Lmr* lmr = nullptr;
  if (trip->segment_length > 0) {
    auto it = f->lmr_by_ctx.find(trip->lmr_context);
    if (it == f->lmr_by_ctx.end()) return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
    lmr = it->second;
    const auto be = f->mr->check_bind(r->slot, trip->lmr_context, trip->virtual_address,
                                      trip->segment_length, pv, ep->pz->id, ep->qp->qpn());
    switch (be) {
      case dpdat::rc::BindError::kOk:
        break;
      case dpdat::rc::BindError::kPzMismatch:
        return err(Type::PROTECTION_VIOLATION);
      case dpdat::rc::BindError::kPrivilegeNotCovered:
        return err(Type::PRIVILEGES_VIOLATION);
      case dpdat::rc::BindError::kOutOfBounds:
        return err(Type::LENGTH_ERROR);
      case dpdat::rc::BindError::kRmrBusy:
        return err(Type::INVALID_STATE);
      default:
        return err(Type::INVALID_PARAMETER, Sub::INVALID_ARG2);
    }
  }
  if (!r->binds.empty() && r->bind_qpn != ep->qp->qpn()) return err(Type::INVALID_STATE);
  uint32_t wr_flags = 0;
  Status st = request_flags(ep, flags, &wr_flags);
  if (!st.ok()) return to_dat(st);
  dpdat::rc::SendWr wr;
  wr.cookie = reinterpret_cast<uintptr_t>(r);
  wr.op = dpdat::rc::WrOp::kBind;
  wr.flags = wr_flags & ~dpdat::rc::wr_flag::kSolicited;
  wr.rmr_handle = r->slot;
  wr.bind_lmr = trip->lmr_context;
  wr.bind_va = trip->virtual_address;
  wr.bind_len = trip->segment_length;
  wr.bind_privileges = pv;
  const uint32_t ctx = f->mr->rmr_predict_context(r->slot, static_cast<uint32_t>(r->binds.size()));
  const auto pr = ep->qp->post_send(wr);
  if (pr != dpdat::rc::Qp::PostResult::kOk) return to_dat(post_result(f, pr, ep));
  r->binds.push_back(
      Rmr::PendingBind{cookie.as_64, lmr, trip->virtual_address, trip->segment_length, pv});
  r->bind_qpn = ep->qp->qpn();
  r->context = ctx;
  *ctx_out = ctx;
  f->progress(now_ns(), true);
  return DAT_SUCCESS;
}

DAT_RETURN dat_rmr_free(DAT_RMR_HANDLE h) {
  Rmr* r = lookup<Rmr>(h, HandleType::kRmr);
  if (r == nullptr) return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_RMR);
  Lock lk(r->ia->iface->mu);
  if (!r->binds.empty()) return err(Type::INVALID_STATE);
  free_rmr(r);
  return DAT_SUCCESS;
}

// ========================================================================== SRQ
// dpdat does not offer shared receive queues (dat_ia_query reports
// srq_supported = DAT_FALSE, max_srqs = 0); the calls validate their handle
// and say so with DAT_MODEL_NOT_SUPPORTED.

DAT_RETURN dat_srq_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE, DAT_SRQ_ATTR*, DAT_SRQ_HANDLE*) {
  if (lookup<Ia>(h, HandleType::kIa) == nullptr)
    return err(Type::INVALID_HANDLE, Sub::INVALID_HANDLE_IA);
  return err(Type::MODEL_NOT_SUPPORTED);
}
DAT_RETURN dat_srq_free(DAT_SRQ_HANDLE) { return err(Type::INVALID_HANDLE); }
DAT_RETURN dat_srq_post_recv(DAT_SRQ_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET*, DAT_DTO_COOKIE) {
  return err(Type::INVALID_HANDLE);
}
DAT_RETURN dat_srq_query(DAT_SRQ_HANDLE, DAT_SRQ_PARAM_MASK, DAT_SRQ_PARAM*) {
  return err(Type::INVALID_HANDLE);
}
DAT_RETURN dat_srq_resize(DAT_SRQ_HANDLE, DAT_COUNT) { return err(Type::INVALID_HANDLE); }
DAT_RETURN dat_srq_set_lw(DAT_SRQ_HANDLE, DAT_COUNT) { return err(Type::INVALID_HANDLE); }

}  // extern "C"
