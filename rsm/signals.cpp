// Signals: SENDs between importer and exporter, counted per segment and
// mirrored by an eventfd (rsm_memseg_get_pollfd).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "objects.hpp"

namespace dpdat::rsm {

Signals* signals_of(void* memseg, Controller** ctl) {
  if (ExportSeg* s = live<ExportSeg>(memseg, Tag::kExport); s != nullptr) {
    *ctl = s->ctl;
    return &s->sig;
  }
  if (ImportSeg* im = live<ImportSeg>(memseg, Tag::kImport); im != nullptr) {
    *ctl = im->ctl;
    return &im->sig;
  }
  return nullptr;
}

}  // namespace dpdat::rsm

using namespace dpdat::rsm;

extern "C" {

int rsm_intr_signal_post(void* memseg, unsigned int flags) {
  const unsigned f = flags & RSM_SIGPOST_NO_ACCUMULATE;
  if (ImportSeg* im = live<ImportSeg>(memseg, Tag::kImport); im != nullptr) {
    std::lock_guard<std::mutex> op(im->op_mu);
    drain(im);  // puts in flight reach the exporter before the signal
    if (is_aborted(im)) return RSMERR_CONN_ABORTED;
    return send_signal(im->conn, im->segid, f) ? RSM_SUCCESS : RSMERR_CONN_ABORTED;
  }
  if (ExportSeg* s = live<ExportSeg>(memseg, Tag::kExport); s != nullptr) {
    // Every granted importer, once its connection is up (an accept is
    // complete when the importer's RTU arrives).  Sends run outside c->mu so
    // a slow importer holds up only this call; an importer that goes away
    // meanwhile simply misses the signal.
    Controller* c = s->ctl;
    std::vector<Conn*> to;
    rsm_memseg_id_t segid = 0;
    {
      std::unique_lock<std::mutex> lk(c->mu);
      if (!s->published) return RSMERR_SEG_NOT_PUBLISHED;
      c->cv.wait_for(lk, kEstablishWait, [s] {
        return std::all_of(s->conns.begin(), s->conns.end(),
                           [](const Conn* k) { return k->established || k->mapping; });
      });
      for (Conn* k : s->conns) {
        if (!k->established || k->mapping) continue;
        k->users++;
        to.push_back(k);
      }
      segid = s->segid;
    }
    for (Conn* k : to) (void)send_signal(k, segid, f);
    std::lock_guard<std::mutex> lk(c->mu);
    for (Conn* k : to)
      if (--k->users == 0 && k->dead) free_conn_resources(k);
    return RSM_SUCCESS;
  }
  return RSMERR_BAD_SEG_HNDL;
}

int rsm_intr_signal_wait(void* memseg, int timeout) {
  Controller* c = nullptr;
  Signals* sg = signals_of(memseg, &c);
  if (sg == nullptr) return RSMERR_BAD_SEG_HNDL;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
  for (;;) {
    int fd = -1;
    {
      std::lock_guard<std::mutex> lk(c->mu);
      if (sg->take()) return RSM_SUCCESS;
      fd = sg->efd;
    }
    int ms = -1;
    if (timeout >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return RSMERR_TIMEOUT;
      ms = static_cast<int>(left.count());
    }
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) return RSMERR_INTERRUPTED;
    if (r == 0 && timeout >= 0) {
      std::lock_guard<std::mutex> lk(c->mu);
      return sg->take() ? RSM_SUCCESS : RSMERR_TIMEOUT;
    }
  }
}

int rsm_memseg_get_pollfd(void* memseg, struct pollfd* fd) {
  Controller* c = nullptr;
  Signals* sg = signals_of(memseg, &c);
  if (sg == nullptr) return RSMERR_BAD_SEG_HNDL;
  if (fd == nullptr) return RSMERR_BAD_ADDR;
  int efd = -1;
  {
    std::lock_guard<std::mutex> lk(c->mu);
    sg->pollfd_refs++;
    efd = sg->efd;
  }
  fd->fd = efd;
  fd->events = POLLIN | POLLRDNORM;  // an eventfd reports POLLIN
  fd->revents = 0;
  return RSM_SUCCESS;
}

int rsm_memseg_release_pollfd(void* memseg) {
  Controller* c = nullptr;
  Signals* sg = signals_of(memseg, &c);
  if (sg == nullptr) return RSMERR_BAD_SEG_HNDL;
  std::lock_guard<std::mutex> lk(c->mu);
  if (sg->pollfd_refs > 0) sg->pollfd_refs--;
  return RSM_SUCCESS;
}

int rsm_intr_signal_wait_pollfd(struct pollfd fds[], nfds_t nfds, int timeout, int* numfdsp) {
  if (fds == nullptr && nfds > 0) return RSMERR_BAD_ADDR;
  const int r = poll(fds, nfds, timeout);
  if (r < 0) return errno == EINTR ? RSMERR_INTERRUPTED : RSMERR_BAD_ADDR;
  if (r == 0) {
    if (numfdsp != nullptr) *numfdsp = 0;
    return RSMERR_TIMEOUT;
  }
  // Consume one signal for each ready fd that belongs to a segment.
  std::vector<std::pair<Controller*, Signals*>> segs;
  {
    std::lock_guard<std::mutex> g(g_mu);
    for (auto& [p, t] : g_live) {
      if (t == Tag::kExport) {
        auto* s = static_cast<ExportSeg*>(const_cast<void*>(p));
        segs.emplace_back(s->ctl, &s->sig);
      } else if (t == Tag::kImport) {
        auto* im = static_cast<ImportSeg*>(const_cast<void*>(p));
        segs.emplace_back(im->ctl, &im->sig);
      }
    }
    int ready = 0;
    for (nfds_t i = 0; i < nfds; ++i) {
      if (fds[i].revents == 0) continue;
      for (auto& [c, sg] : segs) {
        if (sg->efd != fds[i].fd) continue;
        std::lock_guard<std::mutex> lk(c->mu);
        if (!sg->take()) fds[i].revents = 0;  // another waiter took it
      }
      if (fds[i].revents != 0) ready++;
    }
    if (numfdsp != nullptr) *numfdsp = ready;
  }
  return RSM_SUCCESS;
}

}  // extern "C"
