// The IB extensions' atomics in dpdat-perf's loops: posting, reading the
// target words, and checking that the fetched values form the sequence the
// WRs imply (see runs.hpp).

#include <cstring>

#include "runs.hpp"

namespace dpdat::perf {

namespace {

constexpr uint64_t kProbeCookie = 0x50524f4245ull << 24;  // above any WR number

size_t slot(const Options& o, const Layout& L, size_t k, uint64_t j) {
  return L.scratch(k) + static_cast<size_t>((j - 1) % o.tx_depth) * kAtomicWord;
}

}  // namespace

DAT_RETURN post_atomic(Flow& f, const Options& o, const Layout& L, uint64_t j, bool signal,
                       bool cmp_swap) {
  const size_t at = slot(o, L, f.k, j);
  if (!cmp_swap) return f.s->fetch_add(f.k, at, f.dst, L.landing(f.k), 1, j, signal);
  return f.s->cmp_swap(f.k, at, f.dst, L.landing(f.k), f.base + j - 1, f.base + j, j, signal);
}

bool atomic_words(std::vector<Flow>& flows, const Layout& L, const std::function<void()>& drive,
                  std::vector<uint64_t>* v, std::string* err) {
  for (Flow& f : flows) {
    std::memset(f.s->data() + L.src(f.k), 0xA5, kAtomicWord);
    const DAT_RETURN r =
        f.s->fetch_add(f.k, L.src(f.k), f.dst, L.landing(f.k), 0, kProbeCookie, true);
    if (r != DAT_SUCCESS) {
      *err = dat_error("dat_ib_post_fetch_and_add", r);
      return false;
    }
  }
  // Every flow's side is reaped (which drives its interface): in one process
  // the flows of a bidirectional run are both sides.
  std::vector<bool> got(flows.size(), false);
  size_t left = flows.size();
  bool failed = false;
  std::vector<Done> d;
  if (!spin_until(
          [&] {
            for (size_t i = 0; i < flows.size() && !failed; ++i) {
              d.clear();
              if (flows[i].s->reap(flows[i].s->conn(flows[i].k).req, &d, err) < 0) failed = true;
              for (const Done& x : d)
                if (x.cookie == kProbeCookie && !got[i]) got[i] = true, --left;
            }
            return failed || left == 0;
          },
          drive) ||
      failed) {
    if (!failed) *err = "atomics: a fetch-and-add of the target word never completed";
    return false;
  }
  v->clear();
  for (Flow& f : flows) v->push_back(peek64(f.s->data() + L.src(f.k)));
  return true;
}

bool atomic_verify(std::vector<Flow>& flows, const Options& o, const Layout& L,
                   const std::function<void()>& drive, std::string* err) {
  for (Flow& f : flows) {
    const uint64_t first = f.posted > o.tx_depth ? f.posted - o.tx_depth + 1 : 1;
    for (uint64_t j = first; j <= f.posted; ++j) {
      const uint64_t got = peek64(f.s->data() + slot(o, L, f.k, j));
      if (got != f.base + j - 1) {
        *err = o.op + ": QP " + std::to_string(f.k) + " WR " + std::to_string(j) + " fetched " +
               std::to_string(got) + ", expected " + std::to_string(f.base + j - 1);
        return false;
      }
    }
  }
  std::vector<uint64_t> end;
  if (!atomic_words(flows, L, drive, &end, err)) return false;
  for (size_t i = 0; i < flows.size(); ++i)
    if (end[i] != flows[i].base + flows[i].posted) {
      *err = o.op + ": QP " + std::to_string(flows[i].k) + " word ends at " +
             std::to_string(end[i]) + " after " + std::to_string(flows[i].posted) + " WRs from " +
             std::to_string(flows[i].base) + " (expected " +
             std::to_string(flows[i].base + flows[i].posted) + ")";
      return false;
    }
  return true;
}

}  // namespace dpdat::perf
