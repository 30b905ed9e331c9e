// Counters: the successful and the failed completions of the transfers of
// the endpoints bound to them (FI_SEND, FI_RECV, FI_READ, FI_WRITE).
//
// A completion is counted when it is taken off its CQ's EVD, by whoever
// takes it: a CQ read, or a counter read or wait, which takes every event
// waiting on the bound endpoints' CQs (keeping them for the CQ's consumer).
// A transfer the consumer wants no CQ entry for is still signalled when a
// counter counts it; an endpoint with a counter but no CQ on one side gets
// an internal CQ there.
//
// A counter with FI_WAIT_FD has an eventfd: the CQs its endpoints'
// completions arrive on signal it through their CNOs once fi_trywait armed
// it (wait.cpp), so it works in an epoll loop like a CQ's.

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "rdm.hpp"

namespace dpdat::ofi {

namespace {}  // namespace

void cntr_progress(Cntr* c) {
  std::vector<Cq*> cqs;
  std::vector<RdmEp*> rdm;
  {
    std::lock_guard lk(c->mu);
    for (Ep* ep : c->eps)
      for (Cq* cq : {ep->txcq, ep->rxcq})
        if (cq != nullptr && std::find(cqs.begin(), cqs.end(), cq) == cqs.end()) cqs.push_back(cq);
    rdm = c->rdm_eps;
  }
  for (Cq* cq : cqs) cq_progress(cq);
  // Reliable-datagram endpoints count as their protocol completes.
  for (RdmEp* ep : rdm) rdm_poll(ep);
}

namespace {

void progress(Cntr* c) { cntr_progress(c); }

uint64_t cntr_read(fid_cntr* f) {
  auto* c = reinterpret_cast<Cntr*>(f);
  progress(c);
  return c->value.load(std::memory_order_acquire);
}

uint64_t cntr_readerr(fid_cntr* f) {
  auto* c = reinterpret_cast<Cntr*>(f);
  progress(c);
  return c->errs.load(std::memory_order_acquire);
}

int cntr_add(fid_cntr* f, uint64_t v) {
  reinterpret_cast<Cntr*>(f)->value.fetch_add(v, std::memory_order_acq_rel);
  return 0;
}
int cntr_set(fid_cntr* f, uint64_t v) {
  reinterpret_cast<Cntr*>(f)->value.store(v, std::memory_order_release);
  return 0;
}
int cntr_adderr(fid_cntr* f, uint64_t v) {
  reinterpret_cast<Cntr*>(f)->errs.fetch_add(v, std::memory_order_acq_rel);
  return 0;
}
int cntr_seterr(fid_cntr* f, uint64_t v) {
  reinterpret_cast<Cntr*>(f)->errs.store(v, std::memory_order_release);
  return 0;
}

// Until the value reaches threshold (0), an error is counted (-FI_EAVAIL)
// or timeout ms pass (-FI_ETIMEDOUT; -1: no limit).  The interface moves on
// its own (automatic progress) or through the CQ reads of each round.
int cntr_wait(fid_cntr* f, uint64_t threshold, int timeout) {
  auto* c = reinterpret_cast<Cntr*>(f);
  if (c->wait_obj == FI_WAIT_NONE) return -FI_EINVAL;
  const auto start = std::chrono::steady_clock::now();
  const uint64_t errs = c->errs.load(std::memory_order_acquire);
  for (int round = 0;; ++round) {
    progress(c);
    if (c->value.load(std::memory_order_acquire) >= threshold) return 0;
    if (c->errs.load(std::memory_order_acquire) != errs) return -FI_EAVAIL;
    if (timeout >= 0 &&
        std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(timeout))
      return -FI_ETIMEDOUT;
    // Spins a little, then yields, then sleeps briefly between looks.
    if (round < 64) continue;
    if (c->wait_obj == FI_WAIT_YIELD || round < 1024) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

int cntr_close(fid* f) {
  auto* c = reinterpret_cast<Cntr*>(f);
  if (c->refs > 0) return -FI_EBUSY;
  waitfd_close(&c->wait);
  c->dom->refs--;
  delete c;
  return 0;
}

int cntr_control(fid* f, int command, void* arg) {
  auto* c = reinterpret_cast<Cntr*>(f);
  return waitfd_control(&c->wait, c->wait_obj, command, arg);
}

// The CQs whose completions c counts for ep, one entry per kind counted.
std::vector<Cq*> counted_cqs(const Ep* ep, const Cntr* c) {
  std::vector<Cq*> out;
  if (ep->cntr_recv == c && ep->rxcq != nullptr) out.push_back(ep->rxcq);
  for (const Cntr* t : {ep->cntr_send, ep->cntr_read, ep->cntr_write})
    if (t == c && ep->txcq != nullptr) out.push_back(ep->txcq);
  return out;
}

// Each FD counter of ep once (a counter bound for several kinds comes up
// more than once).
std::vector<Cntr*> fd_counters(const Ep* ep) {
  std::vector<Cntr*> out;
  for (Cntr* c : {ep->cntr_send, ep->cntr_recv, ep->cntr_read, ep->cntr_write})
    if (c != nullptr && c->wait.fd >= 0 && std::find(out.begin(), out.end(), c) == out.end())
      out.push_back(c);
  return out;
}

fi_ops g_cntr_fi_ops = {sizeof(fi_ops), cntr_close, no_bind,   cntr_control,
                        no_ops_open,    no_tostr,   no_ops_set};
fi_ops_cntr g_cntr_ops = {sizeof(fi_ops_cntr), cntr_read,   cntr_readerr, cntr_add, cntr_set,
                          cntr_wait,           cntr_adderr, cntr_seterr};

}  // namespace

int cntr_trywait(Cntr* c) {
  if (c->wait.fd < 0) return -FI_EINVAL;
  std::vector<Cq*> cqs;
  std::vector<RdmEp*> rdm;
  {
    std::lock_guard lk(c->mu);
    for (Ep* ep : c->eps)
      for (Cq* cq : counted_cqs(ep, c)) cqs.push_back(cq);
    rdm = c->rdm_eps;
  }
  // RDM endpoints count as they progress: what this pass counts is news the
  // consumer has not read.
  if (!rdm.empty()) {
    const uint64_t before = c->value.load() + c->errs.load();
    for (RdmEp* ep : rdm) rdm_poll(ep);
    if (c->value.load() + c->errs.load() != before) return -FI_EAGAIN;
  }
  waitfd_arm(&c->wait);
  for (RdmEp* ep : rdm) {
    if (rdm_evds_pending(ep)) {
      waitfd_disarm(&c->wait);
      return -FI_EAGAIN;
    }
  }
  // A completion on a CQ's EVD is one that reading the counter counts.
  for (Cq* cq : cqs) {
    if (!cq->evd->q.empty()) {
      waitfd_disarm(&c->wait);
      return -FI_EAGAIN;
    }
  }
  return 0;
}

int cntr_listen_ep(Ep* ep) {
  for (Cntr* c : fd_counters(ep)) {
    for (Cq* cq : counted_cqs(ep, c)) {
      if (int r = cq_listen(cq, &c->wait); r != 0) {
        cntr_unlisten_ep(ep);
        return r;
      }
    }
  }
  return 0;
}

void cntr_unlisten_ep(Ep* ep) {
  for (Cntr* c : fd_counters(ep))
    for (Cq* cq : counted_cqs(ep, c)) cq_unlisten(cq, &c->wait);
}

int cntr_open(fid_domain* domain, fi_cntr_attr* attr, fid_cntr** out, void* context) {
  auto* d = object_of<Domain>(&domain->fid, FI_CLASS_DOMAIN);
  if (d == nullptr || attr == nullptr || out == nullptr) return -FI_EINVAL;
  if (attr->events != FI_CNTR_EVENTS_COMP) return -FI_ENOSYS;
  if (attr->flags != 0) return -FI_EBADFLAGS;
  // FI_WAIT_UNSPEC: the counter's own wait (fi_cntr_wait), a yielding poll.
  fi_wait_obj wait_obj = attr->wait_obj == FI_WAIT_UNSPEC ? FI_WAIT_YIELD : attr->wait_obj;
  if (int r = check_wait_obj(&wait_obj, d->fab); r != 0) return r;
  auto* c = new Cntr();
  c->dom = d;
  c->wait_obj = wait_obj;
  if (wait_obj == FI_WAIT_FD) {
    if (int r = waitfd_open(&c->wait); r != 0) {
      delete c;
      return r;
    }
  }
  c->cntr.fid.fclass = FI_CLASS_CNTR;
  c->cntr.fid.context = context;
  c->cntr.fid.ops = &g_cntr_fi_ops;
  c->cntr.ops = &g_cntr_ops;
  d->refs++;
  *out = &c->cntr;
  return 0;
}

void cntr_bump(Cntr* c, bool ok) {
  (ok ? c->value : c->errs).fetch_add(1, std::memory_order_acq_rel);
}

namespace {

// Drops an endpoint from the counter's list (and its reference), once.
template <typename E>
void unbind_from(Cntr* c, std::vector<E*>* list, E* ep) {
  std::lock_guard lk(c->mu);
  auto it = std::find(list->begin(), list->end(), ep);
  if (it == list->end()) return;
  list->erase(it);
  c->refs--;
}

}  // namespace

void cntr_unbind_rdm(Cntr* c, RdmEp* ep) { unbind_from(c, &c->rdm_eps, ep); }

void cntr_unbind(Cntr* c, Ep* ep) { unbind_from(c, &c->eps, ep); }

}  // namespace dpdat::ofi
