// Poll sets (fi_poll_open): which of a set of CQs and counters has
// something new, each looked at (and its endpoints progressed) by fi_poll.

#include <algorithm>

#include "rdm.hpp"

namespace dpdat::ofi {

namespace {

struct PollSet {
  fid_poll poll{};
  Domain* dom = nullptr;
  std::mutex mu;
  struct Item {
    fid* f = nullptr;
    uint64_t seen = 0;  // a counter's value + errors at the last report
  };
  std::vector<Item> items;
};

bool cq_ready(Cq* cq) {
  if (cq->rdm) return rdm_cq_ready(cq);
  cq_progress(cq);
  dat::SpinLockGuard lk(cq->mu);
  return cq->err.has_value() || !cq->stash.empty();
}

int poll_poll(fid_poll* p, void** context, int count) {
  auto* ps = reinterpret_cast<PollSet*>(p);
  if (count < 0 || (count > 0 && context == nullptr)) return -FI_EINVAL;
  std::lock_guard lk(ps->mu);
  int n = 0;
  for (PollSet::Item& it : ps->items) {
    if (n == count) break;
    bool ready = false;
    if (Cq* cq = object_of<Cq>(it.f, FI_CLASS_CQ); cq != nullptr) {
      ready = cq_ready(cq);
    } else if (Cntr* c = object_of<Cntr>(it.f, FI_CLASS_CNTR); c != nullptr) {
      cntr_progress(c);
      const uint64_t now =
          c->value.load(std::memory_order_acquire) + c->errs.load(std::memory_order_acquire);
      ready = now != it.seen;
      it.seen = now;
    }
    if (ready) context[n++] = it.f->context;
  }
  return n;
}

int poll_add(fid_poll* p, fid* f, uint64_t flags) {
  auto* ps = reinterpret_cast<PollSet*>(p);
  if (flags != 0) return -FI_EBADFLAGS;
  Cq* cq = object_of<Cq>(f, FI_CLASS_CQ);
  Cntr* c = object_of<Cntr>(f, FI_CLASS_CNTR);
  if (cq == nullptr && c == nullptr) return -FI_EINVAL;  // CQs and counters only
  if ((cq != nullptr ? cq->dom : c->dom) != ps->dom) return -FI_EINVAL;
  std::lock_guard lk(ps->mu);
  if (std::any_of(ps->items.begin(), ps->items.end(), [f](const auto& i) { return i.f == f; }))
    return 0;
  PollSet::Item it;
  it.f = f;
  if (c != nullptr)
    it.seen = c->value.load(std::memory_order_acquire) + c->errs.load(std::memory_order_acquire);
  if (cq != nullptr) cq->refs++;
  if (c != nullptr) c->refs++;
  ps->items.push_back(it);
  return 0;
}

void unref(fid* f) {
  if (Cq* cq = object_of<Cq>(f, FI_CLASS_CQ); cq != nullptr) cq->refs--;
  if (Cntr* c = object_of<Cntr>(f, FI_CLASS_CNTR); c != nullptr) c->refs--;
}

int poll_del(fid_poll* p, fid* f, uint64_t flags) {
  auto* ps = reinterpret_cast<PollSet*>(p);
  if (flags != 0) return -FI_EBADFLAGS;
  std::lock_guard lk(ps->mu);
  auto it =
      std::find_if(ps->items.begin(), ps->items.end(), [f](const auto& i) { return i.f == f; });
  if (it == ps->items.end()) return -FI_EINVAL;
  unref(f);
  ps->items.erase(it);
  return 0;
}

int poll_close(fid* f) {
  auto* ps = reinterpret_cast<PollSet*>(f);
  for (const auto& it : ps->items) unref(it.f);
  ps->dom->refs--;
  delete ps;
  return 0;
}

fi_ops g_poll_fi_ops = {sizeof(fi_ops), poll_close, no_bind,   no_control,
                        no_ops_open,    no_tostr,   no_ops_set};
fi_ops_poll g_poll_ops = {sizeof(fi_ops_poll), poll_poll, poll_add, poll_del};

}  // namespace

int poll_open(fid_domain* domain, fi_poll_attr* attr, fid_poll** out) {
  auto* d = object_of<Domain>(&domain->fid, FI_CLASS_DOMAIN);
  if (d == nullptr || out == nullptr) return -FI_EINVAL;
  if (attr != nullptr && attr->flags != 0) return -FI_EBADFLAGS;
  auto* ps = new PollSet();
  ps->dom = d;
  ps->poll.fid.fclass = FI_CLASS_POLL;
  ps->poll.fid.ops = &g_poll_fi_ops;
  ps->poll.ops = &g_poll_ops;
  d->refs++;
  *out = &ps->poll;
  return 0;
}

}  // namespace dpdat::ofi
