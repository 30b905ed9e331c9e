// FI_MULTI_RECV: a receive buffer that takes several messages back to back.
//
// The buffer is posted as one DAT receive marked as a multi-receive: the RC
// engine places each incoming message where the one before ended, and
// retires the receive with the message that leaves less than
// FI_OPT_MIN_MULTI_RECV bytes free.  Each event carries the message's
// offset; the provider keeps the buffer's iovecs to turn it into an
// address, and reports FI_MULTI_RECV on the event that released it.

#include <algorithm>

#include "objects.hpp"

namespace dpdat::ofi {

ssize_t multi_recv_post(Ep* ep, const iovec* iov, const rc::Sge* sge, size_t count, void* context) {
  MultiRecv m;
  m.context = context;
  m.count = count;
  for (size_t i = 0; i < count; ++i) m.iov[i] = iov[i];
  std::list<MultiRecv>::iterator it;
  uint64_t min = 0;
  {
    dat::SpinLockGuard lk(ep->multi_mu);
    it = ep->multi.insert(ep->multi.end(), m);
    // Below one byte the buffer would never be released once full.
    min = std::max<uint64_t>(ep->min_multi_recv, 1);
  }
  const int r = to_fi(dat::ep_post_recv(ep->dep, sge, static_cast<uint32_t>(count),
                                        reinterpret_cast<uintptr_t>(&*it), 0, min));
  if (r != 0) {
    dat::SpinLockGuard lk(ep->multi_mu);
    ep->multi.erase(it);
  }
  return r;
}

bool multi_recv_event(Ep* ep, const dat::Event& ev, MultiHit* out) {
  dat::SpinLockGuard lk(ep->multi_mu);
  auto it = ep->multi.begin();
  while (it != ep->multi.end() && reinterpret_cast<uintptr_t>(&*it) != ev.cookie) ++it;
  if (it == ep->multi.end()) return false;
  out->context = it->context;
  out->released = ev.released;
  out->buf = nullptr;
  uint64_t off = ev.offset;
  for (size_t i = 0; i < it->count; ++i) {
    if (off < it->iov[i].iov_len || (off == it->iov[i].iov_len && i + 1 == it->count)) {
      out->buf = static_cast<uint8_t*>(it->iov[i].iov_base) + off;
      break;
    }
    off -= it->iov[i].iov_len;
  }
  if (ev.released) ep->multi.erase(it);
  return true;
}

}  // namespace dpdat::ofi
