#pragma once
// The world of the stateful queue-pair fuzzer (qp_fuzz.cpp): two RC engines
// joined by the simulated link, each with its own memory table and regions
// that sit against PROT_NONE guard pages, and the honest workload's slots.
//
// Every region is mapped once per process with a guard page on both sides and
// placed so that its last byte is the last byte before the upper guard; the
// bytes between the lower guard and the region's start ("prefix") belong to
// no registration.  Before each input every region is reset to a fixed
// pseudo-random pattern (`pristine`).

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "rc/engine/engine.hpp"
#include "rc/mr_table.hpp"
#include "rc/qp/qp.hpp"
#include "sim/sim_link.hpp"

namespace dpdat::fuzz {

// An invariant that failed: say which (file, line, condition), then abort
// so libFuzzer saves the input.
[[noreturn]] inline void check_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: invariant failed: %s\n", file, line, what);
  std::abort();
}
#define QP_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::dpdat::fuzz::check_failed(#cond, __FILE__, __LINE__))

// Work requests of one input: op i uses slot i of every region.
inline constexpr uint32_t kSlots = 12;
inline constexpr uint64_t kSlot = 2048;  // bytes per slot (largest message)
inline constexpr uint64_t kSlotsBytes = kSlots * kSlot;
inline constexpr uint64_t kWinPad = 512;  // window region: LMR bytes outside the RMR, each side

class Region {
 public:
  Region(uint64_t len, uint64_t seed) : len_(len) {
    const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t usable = (len + 24 + page - 1) / page * page;  // >= 24 prefix bytes
    map_len_ = usable + 2 * page;
    void* m = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    QP_CHECK(m != MAP_FAILED);
    map_ = static_cast<uint8_t*>(m);
    QP_CHECK(mprotect(map_, page, PROT_NONE) == 0);
    QP_CHECK(mprotect(map_ + page + usable, page, PROT_NONE) == 0);
    start_ = map_ + page;
    base_ = start_ + usable - len;
    pristine_.resize(usable);
    std::mt19937_64 r(seed);
    for (auto& b : pristine_) b = static_cast<uint8_t>(r());
  }
  ~Region() { munmap(map_, map_len_); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  void reset() { std::memcpy(start_, pristine_.data(), pristine_.size()); }
  uint8_t* base() const { return base_; }
  uint64_t va() const { return reinterpret_cast<uint64_t>(base_); }
  uint64_t len() const { return len_; }
  // The pattern byte at region offset `off` (may be negative: the prefix).
  uint8_t pristine(int64_t off) const {
    return pristine_[static_cast<size_t>(static_cast<int64_t>(prefix()) + off)];
  }
  uint64_t prefix() const { return static_cast<uint64_t>(base_ - start_); }
  // Bytes [off, off + n) of the region equal the pattern.
  bool unchanged(int64_t off, uint64_t n) const {
    return n == 0 ||
           std::memcmp(base_ + off,
                       &pristine_[static_cast<size_t>(static_cast<int64_t>(prefix()) + off)],
                       n) == 0;
  }
  bool prefix_unchanged() const { return std::memcmp(start_, pristine_.data(), prefix()) == 0; }

 private:
  uint8_t* map_ = nullptr;
  uint64_t map_len_ = 0;
  uint8_t* start_ = nullptr;
  uint8_t* base_ = nullptr;
  uint64_t len_;
  std::vector<uint8_t> pristine_;
};

// One side's memory (persistent over inputs) and the contexts of this input.
struct Host {
  // src: sources of WRITE / SEND (local read only: never changes).
  // tgt: every privilege; the peer's WRITE / READ / atomic target.
  // win: local read/write; an RMR grants the peer [kWinPad, kWinPad + kSlotsBytes).
  // rcv: receive buffers.  res: READ / atomic results.
  // secret: local read/write, used by nobody: never changes.
  Region src, tgt, win, rcv, res, secret;
  explicit Host(uint64_t seed)
      : src(kSlotsBytes, seed + 1),
        tgt(kSlotsBytes, seed + 2),
        win(kSlotsBytes + 2 * kWinPad, seed + 3),
        rcv(kSlotsBytes, seed + 4),
        res(kSlotsBytes, seed + 5),
        secret(4096, seed + 6) {}
  void reset() {
    for (Region* r : {&src, &tgt, &win, &rcv, &res, &secret}) r->reset();
  }
  uint32_t src_lmr = 0, tgt_lmr = 0, win_lmr = 0, rcv_lmr = 0, res_lmr = 0, secret_lmr = 0;
  uint32_t win_rkey = 0;  // the RMR's context
};

struct Side {
  std::unique_ptr<rc::MrTable> mr;
  std::unique_ptr<rc::Engine> engine;
  std::unique_ptr<rc::CompletionQueue> scq, rcq;
  rc::Qp* qp = nullptr;
};

inline constexpr uint32_t kPz = 1;
inline constexpr uint32_t kIp[2] = {0x0A000001, 0x0A000002};
inline constexpr wire::MacAddr kMac[2] = {{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}};

inline void register_host(rc::MrTable& mr, Host& h) {
  using namespace rc::priv;
  auto reg = [&](Region& r, uint32_t p, uint32_t* ctx) {
    QP_CHECK(mr.mr_register(kPz, r.base(), r.va(), r.len(), p, ctx));
  };
  reg(h.src, kLocalRead, &h.src_lmr);
  reg(h.tgt, kAll | kRemoteAtomic, &h.tgt_lmr);
  reg(h.win, kLocalRead | kLocalWrite, &h.win_lmr);
  reg(h.rcv, kLocalRead | kLocalWrite, &h.rcv_lmr);
  reg(h.res, kLocalRead | kLocalWrite, &h.res_lmr);
  reg(h.secret, kLocalRead | kLocalWrite, &h.secret_lmr);
  uint32_t rmr = 0;
  QP_CHECK(mr.mw_alloc(kPz, &rmr));
  const uint64_t wva = h.win.va() + kWinPad;
  QP_CHECK(mr.check_bind(rmr, h.win_lmr, wva, kSlotsBytes, kRemoteRead | kRemoteWrite, kPz) ==
           rc::BindError::kOk);
  h.win_rkey = mr.do_bind(rmr, h.win_lmr, wva, kSlotsBytes, kRemoteRead | kRemoteWrite);
}

}  // namespace dpdat::fuzz
