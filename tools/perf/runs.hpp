#pragma once
// The measurement loops over the uDAPL API, shared by the one-process and the
// cross-process runs (one path for N >= 1 EPs).

#include <functional>
#include <string>
#include <vector>

#include "dat_side.hpp"
#include "options.hpp"
#include "report.hpp"

namespace dpdat::perf {

// Region layout of every side, per QP k and message size n (n_max the
// largest size): [src | landing | scratch], each qps * n_max bytes; QP k
// uses slice k of each area.  A soak's churned connection j then has two
// kChurnBytes slices: its source (on the passive side: where it lands) and
// where it reads back.
struct Layout {
  static constexpr size_t kChurnBytes = 4096;
  size_t slice = 0;  // n_max
  size_t qps = 1;
  size_t churn = 0;
  size_t area() const { return slice * qps; }
  size_t src(size_t k) const { return k * slice; }
  size_t landing(size_t k) const { return area() + k * slice; }
  size_t scratch(size_t k) const { return 2 * area() + k * slice; }
  size_t churn_src(size_t j) const { return 3 * area() + 2 * j * kChurnBytes; }
  size_t churn_back(size_t j) const { return churn_src(j) + kChurnBytes; }
  size_t total() const { return 3 * area() + 2 * churn * kChurnBytes; }
};

// The layout for o's sizes (at least 8 bytes a slice; for atomics a result
// word per WR in flight).
Layout layout_for(const Options& o);

// One stream of messages: requests posted on EP k of `s` toward the peer's
// `dst` triplet.  For SEND in one process `rs`/`rk` is the receiving EP.
struct Flow {
  Side* s = nullptr;
  size_t k = 0;
  DAT_RMR_TRIPLET dst{};
  Side* rs = nullptr;
  size_t rk = 0;
  uint64_t posted = 0, completed = 0, recvs = 0, recv_done = 0;
  uint64_t base = 0;  // atomics: the target word's value before the run
};

// Bandwidth of `flows` at n bytes: `iters` messages per flow, or for
// o.duration seconds after a warm-up.  `drive` is called once a pass (the
// other side's progress in one process; may be empty).
bool run_bw(std::vector<Flow>& flows, const Options& o, const Layout& L, size_t n, uint64_t iters,
            const std::function<void()>& drive, BwFigures* out, std::string* err);

// Default iterations for a bandwidth size (per QP).
uint64_t bw_iters(const Options& o, size_t n);

// Fills slice k of the source area with a pattern particular to QP k.
void fill_pattern(Side& s, const Layout& L, size_t n, uint8_t salt);
// The byte fill_pattern puts at offset i of QP k's slice.
inline uint8_t pattern_byte(size_t i, size_t k, uint8_t salt) {
  return static_cast<uint8_t>((i * 7 + 3) ^ (k * 0x5B + 1) ^ salt);
}
// Reads slice k of the peer's landing area back (RDMA READ) into scratch and
// compares it with our source slice.  False with *err on mismatch / error,
// or when a read-back takes longer than limit_ns.
bool verify_slices(Side& s, const Layout& L, size_t n, const DAT_RMR_TRIPLET& peer,
                   const std::function<void()>& drive, std::string* err,
                   uint64_t limit_ns = 5'000'000'000ull);

// Atomics (atomics.cpp).  The word of flow f is the peer's landing(f.k); the
// value fetched by its WR number j (1-based) lands in slot (j - 1) % tx_depth
// of our scratch(f.k), so the slice holds at least tx_depth words.
// fetch-and-add adds 1; compare-and-swap j compares with base + j - 1 and
// swaps in base + j: either way WR j fetches base + j - 1 and the word ends
// at base + (WRs done).
inline constexpr size_t kAtomicWord = 8;
// cmp_swap: compare-and-swap, else fetch-and-add (--op, decided by the caller
// once per run).
DAT_RETURN post_atomic(Flow& f, const Options& o, const Layout& L, uint64_t j, bool signal,
                       bool cmp_swap);
// Reads each flow's word (a fetch-and-add of 0, waited for) into *v.
bool atomic_words(std::vector<Flow>& flows, const Layout& L, const std::function<void()>& drive,
                  std::vector<uint64_t>* v, std::string* err);
// After a bandwidth run: every flow's word reads base + posted, and the last
// min(posted, tx_depth) slots hold the values their WRs must have fetched.
bool atomic_verify(std::vector<Flow>& flows, const Options& o, const Layout& L,
                   const std::function<void()>& drive, std::string* err);

// Waits (bounded: limit_ns) until pred() holds, calling poll() meanwhile.
bool spin_until(const std::function<bool()>& pred, const std::function<void()>& poll,
                uint64_t limit_ns = 5'000'000'000ull);

// Drains every DTO EVD of `s` (drives its interface); false on an error completion.
bool drive_side(Side& s, std::string* err);

}  // namespace dpdat::perf

namespace dpdat::perf {

// Latency, the initiating side, at n bytes on QP i % qps for iteration i:
//   write: RDMA WRITE into the peer's landing slice, then wait for the
//          peer's WRITE to land in ours (polling the last byte);
//   send:  SEND, then wait for the peer's SEND (receives kept posted);
//   read:  RDMA READ of the peer's source slice, until its completion.
// `peer_step(k, tag)` runs the peer's half in one process (empty across
// processes); `drive` progresses the peer's interface in one process.
bool run_lat(Side& s, const Options& o, const Layout& L, size_t n, uint64_t iters,
             const DAT_RMR_TRIPLET& peer, const std::function<bool(size_t, uint8_t)>& peer_step,
             const std::function<void()>& drive, LatFigures* out, std::string* err);

// The peer's half of one write/send latency iteration on QP k: wait for the
// initiator's message carrying `tag`, answer in kind.  `dequeue`: while
// polling the landing byte, also dequeue (which drives the interface).
bool echo_once(Side& s, const std::string& op, const Layout& L, size_t k, size_t n, uint8_t tag,
               const DAT_RMR_TRIPLET& initiator, bool dequeue, std::string* err);
// Whether a WRITE latency wait dequeues (see --poll-memory).
bool dequeue_while_polling(const Options& o);

// Before a latency round: clear the landing area; for SEND, post one
// full-slice receive per QP.
bool lat_prepare(Side& s, const std::string& op, const Layout& L, std::string* err);

// The tag of iteration i (never 0: the landing area starts zeroed).
inline uint8_t lat_tag(uint64_t i) { return static_cast<uint8_t>(i % 250 + 1); }
inline constexpr uint64_t kLatWarmup = 100;

}  // namespace dpdat::perf
