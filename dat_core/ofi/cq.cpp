// Completion queues: the DTO events of an EVD as fi_cq_entry /
// fi_cq_msg_entry / fi_cq_data_entry, failures as error entries.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "rdm.hpp"

namespace dpdat::ofi {

namespace {

using dat::DtoStatus;

Ep* ep_of(dat::Ep* dep) {
  if (dep == nullptr || dat::lookup<dat::Ep>(dep, dat::HandleType::kEp) == nullptr ||
      dep->context == 0)
    return nullptr;
  return reinterpret_cast<Ep*>(static_cast<uintptr_t>(dep->context));
}

uint64_t op_flags(rc::WcOp op) {
  switch (op) {
    case rc::WcOp::kSend:
      return FI_SEND | FI_MSG;
    case rc::WcOp::kWrite:
      return FI_RMA | FI_WRITE;
    case rc::WcOp::kRead:
      return FI_RMA | FI_READ;
    case rc::WcOp::kCompareSwap:
    case rc::WcOp::kFetchAdd:
      return FI_ATOMIC | FI_READ;
    case rc::WcOp::kBind:
      return 0;
    case rc::WcOp::kRecv:
      return FI_RECV | FI_MSG;
    case rc::WcOp::kRecvWriteImm:
      return FI_RMA | FI_REMOTE_WRITE;
  }
  return 0;
}

}  // namespace

int dto_errno(DtoStatus s, rc::WcOp op) {
  switch (s) {
    case DtoStatus::kSuccess:
      return 0;
    case DtoStatus::kFlushed:
      return FI_ECANCELED;
    case DtoStatus::kLocalLength:
      return op == rc::WcOp::kRecv ? FI_ETRUNC : FI_EMSGSIZE;
    case DtoStatus::kLocalEp:
      return FI_EINVAL;
    case DtoStatus::kLocalProtection:
    case DtoStatus::kRemoteAccess:
      return FI_EACCES;
    case DtoStatus::kRemoteResponder:
      return FI_EREMOTEIO;
    case DtoStatus::kReceiverNotReady:
      return FI_ENORX;
    case DtoStatus::kTransport:
      return FI_ETIMEDOUT;
    case DtoStatus::kBadResponse:
    case DtoStatus::kPartialPacket:
    case DtoStatus::kRmrOperationFailed:
      return FI_EIO;
  }
  return FI_EIO;
}

namespace {

size_t entry_size(fi_cq_format f) {
  switch (f) {
    case FI_CQ_FORMAT_CONTEXT:
      return sizeof(fi_cq_entry);
    case FI_CQ_FORMAT_MSG:
      return sizeof(fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA:
      return sizeof(fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED:
      return sizeof(fi_cq_tagged_entry);
    default:
      return 0;
  }
}

}  // namespace

namespace {

// What one event becomes: nothing (an inject whose completion was not
// asked for, an EP closed meanwhile), an entry, or an error.
enum class Kind { kSkip, kEntry, kError };

Kind convert(const Cq* cq, const CqEvent& s, uint8_t* out, fi_cq_err_entry* err) {
  const dat::Event& ev = s.ev;
  if (ev.num != dat::EventNum::kDto) return Kind::kSkip;
  void* context = reinterpret_cast<void*>(static_cast<uintptr_t>(ev.cookie));
  uint64_t flags = op_flags(ev.op);
  if (s.slotted) {
    if (!s.slot.report && ev.status == DtoStatus::kSuccess) return Kind::kSkip;
    context = s.slot.report ? s.slot.context : nullptr;
  }
  if (s.unreported) {
    if (ev.status == DtoStatus::kSuccess) return Kind::kSkip;
    context = nullptr;
  }
  void* buf = nullptr;
  if (ev.multi) {
    // A multi-receive's: its buffer's context, where the message landed.
    Ep* ep = ep_of(ev.ep);
    MultiHit hit;
    if (ep == nullptr || !multi_recv_event(ep, ev, &hit)) return Kind::kSkip;
    context = hit.context;
    buf = hit.buf;
    if (hit.released) flags |= FI_MULTI_RECV;
  }
  uint64_t data = 0;
  if (ev.has_imm && (ev.op == rc::WcOp::kRecv || ev.op == rc::WcOp::kRecvWriteImm)) {
    flags |= FI_REMOTE_CQ_DATA;
    data = ev.imm;
  }
  const bool inbound = ev.op == rc::WcOp::kRecv || ev.op == rc::WcOp::kRecvWriteImm;
  if (ev.status != DtoStatus::kSuccess) {
    *err = fi_cq_err_entry{};
    err->op_context = context;
    err->flags = flags;
    err->len = inbound ? ev.length : 0;
    err->buf = buf;
    err->data = data;
    err->err = dto_errno(ev.status, ev.op);
    err->prov_errno = static_cast<int>(ev.status);
    return Kind::kError;
  }
  switch (cq->format) {
    case FI_CQ_FORMAT_CONTEXT: {
      fi_cq_entry e{context};
      std::memcpy(out, &e, sizeof(e));
      break;
    }
    case FI_CQ_FORMAT_MSG: {
      fi_cq_msg_entry e{context, flags, inbound ? ev.length : 0};
      std::memcpy(out, &e, sizeof(e));
      break;
    }
    case FI_CQ_FORMAT_DATA: {
      fi_cq_data_entry e{context, flags, inbound ? ev.length : 0, buf, data};
      std::memcpy(out, &e, sizeof(e));
      break;
    }
    default: {
      fi_cq_tagged_entry e{context, flags, inbound ? ev.length : 0, buf, data, 0};
      std::memcpy(out, &e, sizeof(e));
      break;
    }
  }
  return Kind::kEntry;
}

// The counter of ep that counts a completion of op, if any.
Cntr* counter_of(const Ep* ep, rc::WcOp op) {
  switch (op) {
    case rc::WcOp::kSend:
      return ep->cntr_send;
    case rc::WcOp::kRecv:
      return ep->cntr_recv;
    case rc::WcOp::kWrite:
      return ep->cntr_write;
    case rc::WcOp::kRead:
    case rc::WcOp::kCompareSwap:
    case rc::WcOp::kFetchAdd:
      return ep->cntr_read;
    default:
      return nullptr;
  }
}

// Resolves the event in s->ev, just taken off the EVD: an inject slot's
// completion frees the slot now, and the EP's counter counts it.
void resolve_in_place(const Cq* cq, CqEvent* s) {
  s->slotted = false;
  s->unreported = false;
  if (s->ev.num != dat::EventNum::kDto) return;
  // Only a send-side completion can be an inject slot's (and only those,
  // or all where counters are bound, pay for the handle lookup).
  const bool inbound = s->ev.op == rc::WcOp::kRecv || s->ev.op == rc::WcOp::kRecvWriteImm;
  if (inbound && !cq->counting.load(std::memory_order_relaxed)) return;
  Ep* ep = ep_of(s->ev.ep);
  if (ep == nullptr) return;
  if (!inbound) {
    s->slotted = slot_of(ep, s->ev.cookie, &s->slot);
    s->unreported = s->ev.cookie == reinterpret_cast<uintptr_t>(&ep->no_report);
  }
  if (Cntr* c = counter_of(ep, s->ev.op); c != nullptr)
    cntr_bump(c, s->ev.status == DtoStatus::kSuccess);
}

CqEvent resolve(const Cq* cq, dat::Event&& ev) {
  CqEvent s;
  s.ev = std::move(ev);
  resolve_in_place(cq, &s);
  return s;
}

ssize_t cq_read(fid_cq* fcq, void* buf, size_t count) {
  auto* cq = reinterpret_cast<Cq*>(fcq);
  if (cq->rdm) return rdm_cq_read(cq, buf, count, nullptr);
  if (buf == nullptr && count > 0) return -FI_EINVAL;
  dat::SpinLockGuard lk(cq->mu);
  if (cq->err) return -FI_EAVAIL;
  auto& stash = cq->stash;
  const size_t esize = entry_size(cq->format);
  size_t n = 0;
  auto* out = static_cast<uint8_t*>(buf);
  // The events go through the CQ's scratch entry (under mu): a poll that
  // finds nothing, the usual case of a consumer spinning on its CQ,
  // constructs no event.
  CqEvent& s = cq->scratch;
  while (n < count) {
    if (!stash.empty()) {
      s = std::move(stash.front());
      stash.pop_front();
    } else {
      if (!dat::evd_dequeue(cq->evd, &s.ev).ok()) break;
      resolve_in_place(cq, &s);
    }
    fi_cq_err_entry err;
    const Kind k = convert(cq, s, out + n * esize, &err);
    if (k == Kind::kEntry) ++n;
    if (k == Kind::kError) {
      cq->err = err;
      break;
    }
  }
  if (n > 0) return static_cast<ssize_t>(n);
  return cq->err ? -FI_EAVAIL : -FI_EAGAIN;
}

ssize_t cq_readfrom(fid_cq* fcq, void* buf, size_t count, fi_addr_t* src) {
  if (auto* cq = reinterpret_cast<Cq*>(fcq); cq->rdm) return rdm_cq_read(cq, buf, count, src);
  const ssize_t r = cq_read(fcq, buf, count);
  if (src != nullptr)
    for (ssize_t i = 0; i < r; ++i) src[i] = FI_ADDR_NOTAVAIL;  // connected: no source address
  return r;
}

ssize_t cq_readerr(fid_cq* fcq, fi_cq_err_entry* buf, uint64_t flags) {
  auto* cq = reinterpret_cast<Cq*>(fcq);
  if (buf == nullptr || flags != 0) return -FI_EINVAL;
  if (cq->rdm) return rdm_cq_readerr(cq, buf);
  dat::SpinLockGuard lk(cq->mu);
  if (!cq->err) return -FI_EAGAIN;
  void* user_data = buf->err_data;
  const size_t user_size = buf->err_data_size;
  *buf = *cq->err;
  buf->err_data = user_size > 0 ? user_data : nullptr;
  buf->err_data_size = 0;
  cq->err.reset();
  return 1;
}

// A blocking read of a CQ of reliable-datagram endpoints: it polls (their
// progress is the reader's calls), yielding the CPU, then sleeping briefly.
ssize_t rdm_sread(Cq* cq, void* buf, size_t count, fi_addr_t* src, int timeout) {
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t spins = 0;; ++spins) {
    const ssize_t r = rdm_cq_read(cq, buf, count, src);
    if (r != -FI_EAGAIN) return r;
    if (cq->signaled.exchange(false, std::memory_order_acq_rel)) return -FI_EAGAIN;
    if (timeout >= 0 &&
        std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(timeout))
      return -FI_EAGAIN;
    if (spins < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

ssize_t cq_sread(fid_cq* fcq, void* buf, size_t count, const void* cond, int timeout) {
  auto* cq = reinterpret_cast<Cq*>(fcq);
  if (cond != nullptr) return -FI_EINVAL;  // FI_CQ_COND_NONE only
  if (cq->rdm) return rdm_sread(cq, buf, count, nullptr, timeout);
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const ssize_t r = cq_read(fcq, buf, count);
    if (r != -FI_EAGAIN) return r;
    if (cq->signaled.exchange(false, std::memory_order_acq_rel)) return -FI_EAGAIN;
    uint64_t left_us = dat::kInfinite;
    if (timeout >= 0) {
      const auto spent = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count();
      const int64_t left = int64_t{timeout} * 1000 - spent;
      if (left <= 0) return -FI_EAGAIN;
      left_us = static_cast<uint64_t>(left);
    }
    dat::Event ev;
    const dat::Status st = dat::evd_wait(cq->evd, left_us, 1, &ev, nullptr);
    if (st.ok()) {
      dat::SpinLockGuard lk(cq->mu);
      cq->stash.push_back(resolve(cq, std::move(ev)));
    } else if (st.type != dat::Type::TIMEOUT_EXPIRED) {
      // Another thread waits on this CQ: poll gently.
      std::this_thread::sleep_for(std::chrono::microseconds(std::min<uint64_t>(left_us, 1000)));
    }
  }
}

ssize_t cq_sreadfrom(fid_cq* fcq, void* buf, size_t count, fi_addr_t* src, const void* cond,
                     int timeout) {
  if (auto* cq = reinterpret_cast<Cq*>(fcq); cq->rdm) {
    if (cond != nullptr) return -FI_EINVAL;
    return rdm_sread(cq, buf, count, src, timeout);
  }
  const ssize_t r = cq_sread(fcq, buf, count, cond, timeout);
  if (src != nullptr)
    for (ssize_t i = 0; i < r; ++i) src[i] = FI_ADDR_NOTAVAIL;
  return r;
}

int cq_signal(fid_cq* fcq) {
  auto* cq = reinterpret_cast<Cq*>(fcq);
  cq->signaled.store(true, std::memory_order_release);
  return to_fi(dat::evd_post_se(cq->evd, nullptr));
}

const char* cq_strerror(fid_cq*, int prov_errno, const void*, char* buf, size_t len) {
  const char* s = "dpdat: transfer failed";
  switch (static_cast<DtoStatus>(prov_errno)) {
    case DtoStatus::kFlushed:
      s = "dpdat: flushed (the connection went down before the transfer finished)";
      break;
    case DtoStatus::kLocalLength:
      s = "dpdat: local length error (receive buffer too small or bad local lengths)";
      break;
    case DtoStatus::kLocalEp:
      s = "dpdat: malformed work request";
      break;
    case DtoStatus::kLocalProtection:
      s = "dpdat: local protection error (memory descriptor, bounds or access rights)";
      break;
    case DtoStatus::kRemoteAccess:
      s = "dpdat: remote access error (key, bounds or access rights at the peer)";
      break;
    case DtoStatus::kRemoteResponder:
      s = "dpdat: remote operational error";
      break;
    case DtoStatus::kReceiverNotReady:
      s = "dpdat: receiver not ready (retries spent)";
      break;
    case DtoStatus::kTransport:
      s = "dpdat: transport retries spent (peer gone)";
      break;
    case DtoStatus::kBadResponse:
      s = "dpdat: bad response (invalid request at the peer)";
      break;
    default:
      break;
  }
  if (buf != nullptr && len > 0) {
    std::snprintf(buf, len, "%s", s);
    return buf;
  }
  return s;
}

int cq_close(fid* f) {
  auto* cq = reinterpret_cast<Cq*>(f);
  if (cq->refs > 0) return -FI_EBUSY;
  if (!dat::evd_free(cq->evd).ok()) return -FI_EBUSY;
  waitfd_close(&cq->wait);
  cq->dom->refs--;
  delete cq;
  return 0;
}

int cq_control(fid* f, int command, void* arg) {
  auto* cq = reinterpret_cast<Cq*>(f);
  return waitfd_control(&cq->wait, cq->wait_obj, command, arg);
}

fi_ops g_cq_fi_ops = {sizeof(fi_ops), cq_close, no_bind,   cq_control,
                      no_ops_open,    no_tostr, no_ops_set};
fi_ops_cq g_cq_ops = {sizeof(fi_ops_cq), cq_read,      cq_readfrom, cq_readerr,
                      cq_sread,          cq_sreadfrom, cq_signal,   cq_strerror};

}  // namespace

bool reclaim_slots(Cq* cq) {
  dat::SpinLockGuard lk(cq->mu);
  for (;;) {
    dat::Event ev;
    if (!dat::evd_dequeue(cq->evd, &ev).ok()) return false;
    CqEvent s = resolve(cq, std::move(ev));
    const bool slotted = s.slotted;
    if (!cq->internal) cq->stash.push_back(std::move(s));
    if (slotted) return true;
  }
}

int cq_trywait(Cq* cq) {
  if (cq->wait.fd < 0) return -FI_EINVAL;
  if (cq->rdm) return rdm_cq_trywait(cq);
  dat::SpinLockGuard lk(cq->mu);
  if (cq->err || !cq->stash.empty()) return -FI_EAGAIN;
  waitfd_arm(&cq->wait);
  if (cq->evd->q.empty()) return 0;
  waitfd_disarm(&cq->wait);
  return -FI_EAGAIN;
}

// Which wait objects a CQ, EQ or counter offers: none, the provider's own
// (fi_*_sread), yield, or a file descriptor; 0 or -FI_ENOSYS.
int check_wait_obj(fi_wait_obj* obj, const Fabric* fab) {
  // Nothing moves the interface while the consumer sleeps in poll() under
  // manual progress (progress=inline).
  const bool manual = fab->cfg.text.find("progress=inline") != std::string::npos;
  switch (*obj) {
    case FI_WAIT_NONE:
    case FI_WAIT_YIELD:
      return 0;
    case FI_WAIT_UNSPEC:
      // The provider's pick: a descriptor where one can work (what ofi_rxm
      // then asks for through FI_GETWAIT); fi_*_sread either way.
      if (!manual) *obj = FI_WAIT_FD;
      return 0;
    case FI_WAIT_FD:
      if (manual) {
        FI_WARN(&g_prov, FI_LOG_CQ, "FI_WAIT_FD needs automatic progress\n");
        return -FI_ENOSYS;
      }
      return 0;
    default:  // wait sets, mutex/condition pairs
      return -FI_ENOSYS;
  }
}

void cq_agent(void* instance, void* /*evd*/) {
  auto* cq = static_cast<Cq*>(instance);
  waitfd_signal(&cq->wait);  // nothing without a descriptor of its own
  std::lock_guard lk(cq->listen_mu);
  for (WaitFd* w : cq->listeners) waitfd_signal(w);
}

// (The agent runs with no interface lock held: taking listen_mu before the
// interface's lock here cannot deadlock with it.)
int cq_listen(Cq* cq, WaitFd* w) {
  std::lock_guard lk(cq->listen_mu);
  if (cq->wait.cno == nullptr) {
    dat::Cno* cno = nullptr;
    dat::Status st = dat::cno_create(cq->dom->pz->ia, cq, cq_agent, &cno);
    if (st.ok()) st = dat::evd_modify_cno(cq->evd, cno);
    if (!st.ok()) {
      if (cno != nullptr && !dat::cno_free(cno).ok())
        FI_WARN(&g_prov, FI_LOG_CQ, "CNO of a CQ not freed\n");
      return to_fi(st);
    }
    cq->wait.cno = cno;
  }
  cq->listeners.push_back(w);
  return 0;
}

void cq_unlisten(Cq* cq, WaitFd* w) {
  std::lock_guard lk(cq->listen_mu);
  auto it = std::find(cq->listeners.begin(), cq->listeners.end(), w);
  if (it != cq->listeners.end()) cq->listeners.erase(it);
}

void cq_progress(Cq* cq) {
  dat::SpinLockGuard lk(cq->mu);
  dat::Event ev;
  while (dat::evd_dequeue(cq->evd, &ev).ok()) {
    CqEvent s = resolve(cq, std::move(ev));
    if (!cq->internal) cq->stash.push_back(std::move(s));
  }
}

int cq_internal(Domain* d, Cq** out) {
  fi_cq_attr attr{};
  attr.size = kTxSize + kRxSize;
  attr.format = FI_CQ_FORMAT_CONTEXT;
  fid_cq* f = nullptr;
  if (int r = cq_open(&d->domain, &attr, &f, nullptr); r != 0) return r;
  *out = reinterpret_cast<Cq*>(f);
  (*out)->internal = true;
  return 0;
}

void cq_internal_close(Cq* cq) {
  cq->refs--;
  if (cq_close(&cq->cq.fid) != 0) FI_WARN(&g_prov, FI_LOG_CQ, "internal CQ not freed\n");
}

int cq_open(fid_domain* domain, fi_cq_attr* attr, fid_cq** out, void* context) {
  auto* d = object_of<Domain>(&domain->fid, FI_CLASS_DOMAIN);
  if (d == nullptr || attr == nullptr || out == nullptr) return -FI_EINVAL;
  if ((attr->flags & ~static_cast<uint64_t>(FI_AFFINITY)) != 0) return -FI_EBADFLAGS;
  fi_wait_obj wait_obj = attr->wait_obj;
  if (int r = check_wait_obj(&wait_obj, d->fab); r != 0) return r;
  if (attr->wait_cond != FI_CQ_COND_NONE) return -FI_ENOSYS;
  const fi_cq_format format =
      attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
  if (entry_size(format) == 0) return -FI_ENOSYS;
  auto* cq = new Cq();
  cq->dom = d;
  cq->format = format;
  cq->size = std::clamp<size_t>(attr->size, 256, 1u << 16);
  cq->wait_obj = wait_obj;
  if (wait_obj == FI_WAIT_FD) {
    int r = waitfd_open(&cq->wait);
    if (r == 0) r = to_fi(dat::cno_create(d->pz->ia, cq, cq_agent, &cq->wait.cno));
    if (r != 0) {
      waitfd_close(&cq->wait);
      delete cq;
      return r;
    }
  }
  dat::Status st = dat::evd_create(d->pz->ia, static_cast<int64_t>(cq->size), cq->wait.cno,
                                   dat::evd_flag::kDto | dat::evd_flag::kSoftware, &cq->evd);
  if (!st.ok()) {
    waitfd_close(&cq->wait);
    delete cq;
    return to_fi(st);
  }
  cq->cq.fid.fclass = FI_CLASS_CQ;
  cq->cq.fid.context = context;
  cq->cq.fid.ops = &g_cq_fi_ops;
  cq->cq.ops = &g_cq_ops;
  d->refs++;
  *out = &cq->cq;
  return 0;
}

}  // namespace dpdat::ofi
