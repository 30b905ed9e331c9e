// Event queues: the DAT connection and connection-request events of an EVD
// as FI_CONNREQ / FI_CONNECTED / FI_SHUTDOWN entries and error entries.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "objects.hpp"

namespace dpdat::ofi {

namespace {

using dat::EventNum;

Ep* ep_of(dat::Ep* dep) {
  if (dat::lookup<dat::Ep>(dep, dat::HandleType::kEp) == nullptr || dep->context == 0)
    return nullptr;
  return reinterpret_cast<Ep*>(static_cast<uintptr_t>(dep->context));
}

EqEntry cm_entry(uint32_t event, fid_t fid, fi_info* info, const uint8_t* pdata, size_t len) {
  EqEntry e;
  e.event = event;
  fi_eq_cm_entry cm{};
  cm.fid = fid;
  cm.info = info;
  e.bytes.resize(sizeof(cm) + len);
  std::memcpy(e.bytes.data(), &cm, sizeof(cm));
  if (len > 0) std::memcpy(e.bytes.data() + sizeof(cm), pdata, len);
  return e;
}

EqEntry err_entry(Ep* ep, int err, EventNum n, const uint8_t* pdata, size_t len) {
  EqEntry e;
  e.is_err = true;
  e.err.fid = &ep->ep.fid;
  e.err.context = ep->ep.fid.context;
  e.err.err = err;
  e.err.prov_errno = static_cast<int>(n);
  if (len > 0) e.err_data.assign(pdata, pdata + len);
  return e;
}

// The FI_CONNREQ of a DAT connection request: an fi_info for fi_endpoint /
// fi_accept (handle: the request) with the peer's address and CM data.
bool connreq_entry(const dat::Event& ev, EqEntry* out) {
  dat::Cr* cr = dat::lookup<dat::Cr>(ev.cr, dat::HandleType::kCr);
  if (cr == nullptr || ev.sp == nullptr || ev.sp->context == 0) return false;
  auto* pep = reinterpret_cast<Pep*>(static_cast<uintptr_t>(ev.sp->context));
  std::vector<uint8_t> pdata;
  uint32_t peer_ip = 0;
  {
    dat::Lock lk(cr->ia->iface);
    pdata = cr->pdata;
    peer_ip = cr->peer_ip;
  }
  fi_info* info = fi_dupinfo(pep->info);
  if (info == nullptr) return false;
  auto* req = new ConnReq();
  req->fid_.fclass = FI_CLASS_CONNREQ;
  req->cr = cr;
  info->handle = &req->fid_;
  std::free(info->src_addr);
  info->src_addr = std::malloc(sizeof(sockaddr_in));
  info->src_addrlen = sizeof(sockaddr_in);
  if (info->src_addr != nullptr) {
    const sockaddr_in s = make_sin(pep->fab->cfg.ip, pep->port);
    std::memcpy(info->src_addr, &s, sizeof(s));
  }
  std::free(info->dest_addr);
  info->dest_addr = std::malloc(sizeof(sockaddr_in));
  info->dest_addrlen = sizeof(sockaddr_in);
  if (info->dest_addr != nullptr) {
    const sockaddr_in s = make_sin(peer_ip, 0);
    std::memcpy(info->dest_addr, &s, sizeof(s));
  }
  *out = cm_entry(FI_CONNREQ, &pep->pep.fid, info, pdata.data(), pdata.size());
  return true;
}

}  // namespace

void eq_convert(Eq* eq, const dat::Event& ev) {
  FI_INFO(&g_prov, FI_LOG_EQ, "DAT event %#x ep %p cr %p\n", static_cast<unsigned>(ev.num),
          static_cast<void*>(ev.ep), static_cast<void*>(ev.cr));
  EqEntry e;
  if (ev.num == EventNum::kConnRequest) {
    if (connreq_entry(ev, &e)) eq->entries.push_back(std::move(e));
    return;
  }
  Ep* ep = ev.ep != nullptr ? ep_of(ev.ep) : nullptr;
  if (ep == nullptr) return;  // software wake-up, or an EP closed meanwhile
  switch (ev.num) {
    case EventNum::kEstablished:
      eq->entries.push_back(cm_entry(FI_CONNECTED, &ep->ep.fid, nullptr, ev.pdata, ev.pdata_len));
      break;
    case EventNum::kDisconnected:
    case EventNum::kBroken:
      eq->entries.push_back(cm_entry(FI_SHUTDOWN, &ep->ep.fid, nullptr, nullptr, 0));
      break;
    case EventNum::kPeerRejected:
    case EventNum::kNonPeerRejected:
      eq->entries.push_back(err_entry(ep, FI_ECONNREFUSED, ev.num, ev.pdata, ev.pdata_len));
      break;
    case EventNum::kTimedOut:
      eq->entries.push_back(err_entry(ep, FI_ETIMEDOUT, ev.num, nullptr, 0));
      break;
    case EventNum::kUnreachable:
      eq->entries.push_back(err_entry(ep, FI_EHOSTUNREACH, ev.num, nullptr, 0));
      break;
    case EventNum::kAcceptCompletionError:
      eq->entries.push_back(err_entry(ep, FI_ECONNABORTED, ev.num, nullptr, 0));
      break;
    default:
      break;
  }
}

namespace {

// Moves DAT events into entries until one is there (eq->mu held).
void fill(Eq* eq) {
  while (eq->entries.empty() && eq->evd != nullptr) {
    dat::Event ev;
    if (!dat::evd_dequeue(eq->evd, &ev).ok()) return;
    eq_convert(eq, ev);
  }
}

ssize_t eq_read(fid_eq* feq, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  auto* eq = reinterpret_cast<Eq*>(feq);
  if (event == nullptr || (buf == nullptr && len > 0)) return -FI_EINVAL;
  std::lock_guard lk(eq->mu);
  fill(eq);
  if (eq->entries.empty()) return -FI_EAGAIN;
  EqEntry& e = eq->entries.front();
  if (e.is_err) return -FI_EAVAIL;
  const bool cm = e.bytes.size() >= sizeof(fi_eq_cm_entry) &&
                  (e.event == FI_CONNREQ || e.event == FI_CONNECTED || e.event == FI_SHUTDOWN);
  if (len < (cm ? sizeof(fi_eq_cm_entry) : e.bytes.size())) return -FI_ETOOSMALL;
  const size_t n = std::min(len, e.bytes.size());  // CM data: up to the space given
  std::memcpy(buf, e.bytes.data(), n);
  *event = e.event;
  if ((flags & FI_PEEK) == 0) eq->entries.pop_front();
  return static_cast<ssize_t>(n);
}

ssize_t eq_readerr(fid_eq* feq, fi_eq_err_entry* buf, uint64_t flags) {
  auto* eq = reinterpret_cast<Eq*>(feq);
  if (buf == nullptr) return -FI_EINVAL;
  std::lock_guard lk(eq->mu);
  fill(eq);
  if (eq->entries.empty() || !eq->entries.front().is_err) return -FI_EAGAIN;
  EqEntry& e = eq->entries.front();
  void* user_data = buf->err_data;
  const size_t user_size = buf->err_data_size;
  *buf = e.err;
  buf->err_data = nullptr;
  buf->err_data_size = 0;
  if (!e.err_data.empty()) {
    if (user_data != nullptr && user_size > 0) {  // the consumer's buffer (API 1.5+)
      buf->err_data_size = std::min(user_size, e.err_data.size());
      std::memcpy(user_data, e.err_data.data(), buf->err_data_size);
      buf->err_data = user_data;
    } else {  // valid until the next read
      eq->last_err_data = e.err_data;
      buf->err_data = eq->last_err_data.data();
      buf->err_data_size = eq->last_err_data.size();
    }
  }
  if ((flags & FI_PEEK) == 0) eq->entries.pop_front();
  return sizeof(fi_eq_err_entry);
}

ssize_t eq_write(fid_eq* feq, uint32_t event, const void* buf, size_t len, uint64_t flags) {
  auto* eq = reinterpret_cast<Eq*>(feq);
  if ((buf == nullptr && len > 0) || flags != 0) return -FI_EINVAL;
  EqEntry e;
  e.event = event;
  if (len > 0)
    e.bytes.assign(static_cast<const uint8_t*>(buf), static_cast<const uint8_t*>(buf) + len);
  dat::Evd* evd = nullptr;
  {
    std::lock_guard lk(eq->mu);
    eq->entries.push_back(std::move(e));
    evd = eq->evd;
  }
  // A software event wakes a thread in fi_eq_sread; eq_convert skips it.
  if (evd != nullptr && !dat::evd_post_se(evd, nullptr).ok())
    FI_DBG(&g_prov, FI_LOG_EQ, "no wake-up for fi_eq_write (EVD full)\n");
  waitfd_signal(&eq->wait);
  return static_cast<ssize_t>(len);
}

ssize_t eq_sread(fid_eq* feq, uint32_t* event, void* buf, size_t len, int timeout, uint64_t flags) {
  auto* eq = reinterpret_cast<Eq*>(feq);
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    ssize_t r = eq_read(feq, event, buf, len, flags);
    if (r != -FI_EAGAIN) return r;
    uint64_t left_us = dat::kInfinite;
    if (timeout >= 0) {
      const auto spent = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count();
      const int64_t left = int64_t{timeout} * 1000 - spent;
      if (left <= 0) return -FI_EAGAIN;
      left_us = static_cast<uint64_t>(left);
    }
    dat::Evd* evd = nullptr;
    {
      std::lock_guard lk(eq->mu);
      evd = eq->evd;
    }
    dat::Event ev;
    const dat::Status st = evd != nullptr ? dat::evd_wait(evd, left_us, 1, &ev, nullptr)
                                          : dat::fail(dat::Type::INVALID_STATE);
    if (st.ok()) {
      std::lock_guard lk(eq->mu);
      eq_convert(eq, ev);
    } else if (st.type != dat::Type::TIMEOUT_EXPIRED) {
      // Nothing bound yet, or another thread waits on the EVD: poll gently.
      std::this_thread::sleep_for(std::chrono::microseconds(std::min<uint64_t>(left_us, 1000)));
    }
  }
}

const char* eq_strerror(fid_eq*, int prov_errno, const void*, char* buf, size_t len) {
  const char* s = "dpdat: connection error";
  switch (static_cast<EventNum>(prov_errno)) {
    case EventNum::kPeerRejected:
      s = "dpdat: the peer rejected the connection";
      break;
    case EventNum::kNonPeerRejected:
      s = "dpdat: no listener at the peer's address and port";
      break;
    case EventNum::kTimedOut:
      s = "dpdat: connection request timed out";
      break;
    case EventNum::kUnreachable:
      s = "dpdat: peer unreachable (no ARP answer)";
      break;
    case EventNum::kAcceptCompletionError:
      s = "dpdat: the connection failed after accept";
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

int eq_close(fid* f) {
  auto* eq = reinterpret_cast<Eq*>(f);
  if (eq->refs > 0) return -FI_EBUSY;
  for (EqEntry& e : eq->entries) {
    if (e.event != FI_CONNREQ || e.is_err) continue;
    fi_eq_cm_entry cm;
    std::memcpy(&cm, e.bytes.data(), sizeof(cm));
    if (cm.info != nullptr) {
      delete reinterpret_cast<ConnReq*>(cm.info->handle);
      cm.info->handle = nullptr;
      fi_freeinfo(cm.info);
    }
  }
  if (eq->evd != nullptr && !dat::evd_free(eq->evd).ok()) return -FI_EBUSY;
  waitfd_close(&eq->wait);
  {
    std::lock_guard lk(eq->fab->mu);
    eq->fab->refs--;
  }
  delete eq;
  return 0;
}

int eq_control(fid* f, int command, void* arg) {
  auto* eq = reinterpret_cast<Eq*>(f);
  return waitfd_control(&eq->wait, eq->wait_obj, command, arg);
}

fi_ops g_eq_fi_ops = {sizeof(fi_ops), eq_close, no_bind,   eq_control,
                      no_ops_open,    no_tostr, no_ops_set};
fi_ops_eq g_eq_ops = {sizeof(fi_ops_eq), eq_read, eq_readerr, eq_write, eq_sread, eq_strerror};

}  // namespace

int eq_open(fid_fabric* fabric, fi_eq_attr* attr, fid_eq** out, void* context) {
  auto* fab = object_of<Fabric>(&fabric->fid, FI_CLASS_FABRIC);
  if (fab == nullptr || attr == nullptr || out == nullptr) return -FI_EINVAL;
  fi_wait_obj wait_obj = attr->wait_obj;
  if (int r = check_wait_obj(&wait_obj, fab); r != 0) return r;
  if (attr->flags != 0 && attr->flags != FI_WRITE) return -FI_EBADFLAGS;
  auto* eq = new Eq();
  eq->fab = fab;
  eq->wait_obj = wait_obj;
  if (wait_obj == FI_WAIT_FD) {
    if (int r = waitfd_open(&eq->wait); r != 0) {
      delete eq;
      return r;
    }
  }
  eq->size = std::max<size_t>(attr->size, 64);
  eq->eq.fid.fclass = FI_CLASS_EQ;
  eq->eq.fid.context = context;
  eq->eq.fid.ops = &g_eq_fi_ops;
  eq->eq.ops = &g_eq_ops;
  {
    std::lock_guard lk(fab->mu);
    fab->refs++;
  }
  *out = &eq->eq;
  return 0;
}

void eq_drain(Eq* eq) {
  std::lock_guard lk(eq->mu);
  dat::Event ev;
  while (eq->evd != nullptr && dat::evd_dequeue(eq->evd, &ev).ok()) eq_convert(eq, ev);
}

void eq_forget(Eq* eq, const fid* f) {
  std::lock_guard lk(eq->mu);
  std::erase_if(eq->entries, [f](const EqEntry& e) {
    if (e.is_err) return e.err.fid == f;
    fid_t entry_fid = nullptr;
    if (e.bytes.size() >= sizeof(fid_t)) std::memcpy(&entry_fid, e.bytes.data(), sizeof(fid_t));
    return entry_fid == f && e.event != FI_CONNREQ;
  });
}

int eq_trywait(Eq* eq) {
  if (eq->wait.fd < 0) return -FI_EINVAL;
  std::lock_guard lk(eq->mu);
  if (!eq->entries.empty()) return -FI_EAGAIN;
  waitfd_arm(&eq->wait);
  if (eq->evd == nullptr || eq->evd->q.empty()) return 0;
  waitfd_disarm(&eq->wait);
  return -FI_EAGAIN;
}

int eq_attach(Eq* eq, dat::Ia* ia) {
  std::lock_guard lk(eq->mu);
  if (eq->evd != nullptr) return eq->evd->ia->iface == ia->iface ? 0 : -FI_EINVAL;
  if (int r = waitfd_attach(&eq->wait, ia); r != 0) return r;
  dat::Status st = dat::evd_create(
      ia, static_cast<int64_t>(eq->size), eq->wait.cno,
      dat::evd_flag::kCr | dat::evd_flag::kConnection | dat::evd_flag::kSoftware, &eq->evd);
  return to_fi(st);
}

}  // namespace dpdat::ofi
