// File-descriptor wait objects (FI_WAIT_FD) of CQs, EQs and counters, and
// fi_trywait.
//
// Each object with an FD wait object owns an eventfd and a DAT CNO on its
// EVD: the CNO's agent runs when an event reaches the EVD, and writes the
// eventfd when the consumer has armed it.  fi_trywait arms (after emptying
// the eventfd) and then looks at the queue, so an event either is seen
// there (-FI_EAGAIN) or arrives later and makes the descriptor readable.
// Nothing is written on the data path unless a consumer is about to sleep.
// A counter has no EVD of its own: the CNOs of the CQs its endpoints'
// completions arrive on signal it (cq_agent).

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "objects.hpp"

namespace dpdat::ofi {

namespace {

void agent(void* instance, void* /*evd*/) { waitfd_signal(static_cast<WaitFd*>(instance)); }

}  // namespace

int waitfd_attach(WaitFd* w, dat::Ia* ia) {
  if (w->fd < 0 || w->cno != nullptr) return 0;
  return to_fi(dat::cno_create(ia, w, agent, &w->cno));
}

int waitfd_open(WaitFd* w) {
  w->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  return w->fd >= 0 ? 0 : -errno;
}

void waitfd_signal(WaitFd* w) {
  if (w->fd < 0 || !w->armed.exchange(false, std::memory_order_acq_rel)) return;
  const uint64_t one = 1;
  // A full counter (never, in practice) leaves the descriptor readable.
  if (write(w->fd, &one, sizeof(one)) != static_cast<ssize_t>(sizeof(one)) && errno != EAGAIN)
    FI_WARN(&g_prov, FI_LOG_CORE, "eventfd write failed (%d)\n", errno);
}

void waitfd_arm(WaitFd* w) {
  uint64_t v = 0;
  while (read(w->fd, &v, sizeof(v)) == static_cast<ssize_t>(sizeof(v))) {
  }
  w->armed.store(true, std::memory_order_seq_cst);
  // Pairs with the fence of event delivery (Iface::deliver): either the
  // queue check after this sees the event, or the agent sees `armed`.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void waitfd_disarm(WaitFd* w) { w->armed.store(false, std::memory_order_relaxed); }

void waitfd_close(WaitFd* w) {
  if (w->cno != nullptr) {
    if (!dat::cno_modify_agent(w->cno, nullptr, nullptr).ok() || !dat::cno_free(w->cno).ok())
      FI_WARN(&g_prov, FI_LOG_CORE, "CNO of a wait object not freed\n");
    w->cno = nullptr;
  }
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
}

int waitfd_control(WaitFd* w, fi_wait_obj obj, int command, void* arg) {
  switch (command) {
    case FI_GETWAIT:
      if (arg == nullptr) return -FI_EINVAL;
      if (w->fd < 0) return -FI_ENODATA;
      *static_cast<int*>(arg) = w->fd;
      return 0;
    case FI_GETWAITOBJ:
      if (arg == nullptr) return -FI_EINVAL;
      *static_cast<fi_wait_obj*>(arg) = obj;
      return 0;
    default:
      return -FI_ENOSYS;
  }
}

int trywait(fid_fabric* /*fabric*/, fid** fids, int count) {
  if (fids == nullptr || count < 0) return -FI_EINVAL;
  for (int i = 0; i < count; ++i) {
    int r = -FI_EINVAL;
    if (fids[i] == nullptr) return -FI_EINVAL;
    switch (fids[i]->fclass) {
      case FI_CLASS_CQ:
        r = cq_trywait(reinterpret_cast<Cq*>(fids[i]));
        break;
      case FI_CLASS_EQ:
        r = eq_trywait(reinterpret_cast<Eq*>(fids[i]));
        break;
      case FI_CLASS_CNTR:
        r = cntr_trywait(reinterpret_cast<Cntr*>(fids[i]));
        break;
      default:
        break;
    }
    if (r != 0) return r;
  }
  return 0;
}

}  // namespace dpdat::ofi
