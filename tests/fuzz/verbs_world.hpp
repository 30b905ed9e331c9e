#pragma once
// The verbs call-sequence fuzzer's world (verbs_fuzz.cpp): a small table of
// live verbs objects in three contexts, what the fuzzer expects of each, and
// the ledger of the work requests posted, against which every completion is
// checked.
//
// Slots hold live objects only: a destroy that succeeds empties its slot, so
// no call ever gets a freed pointer (real libibverbs gives those no
// meaning).  Invalid use is what the front defines: NULL objects, objects of
// another context, wrong states, bad masks, keys and sizes.

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "verbs_rules.hpp"

#define VF_CHECK(c)                                                                       \
  do {                                                                                    \
    if (!(c)) {                                                                           \
      std::fprintf(stderr, "verbs_fuzz: %s:%d: check failed: %s (action %d)\n", __FILE__, \
                   __LINE__, #c, ::dpdat::fuzz::verbs_world::g_action);                   \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

namespace dpdat::fuzz::verbs_world {

inline int g_action = -1;  // the action being run (for the failure message)

inline constexpr int kCtx = 3;  // 0: device A, 1: device B, 2: a second context on A
inline constexpr int kPd = 4, kMr = 6, kCh = 2, kCq = 4, kSrq = 2, kQp = 6;
inline constexpr size_t kRegion = 4096;  // each MR slot's buffer
inline constexpr uint32_t kMaxRdAtomic = 16;

// A table of slots indexed by int (slot numbers are -1 for "none").
template <typename S, size_t N>
struct Slots : std::array<S, N> {
  S& operator[](int i) { return std::array<S, N>::operator[](static_cast<size_t>(i)); }
  const S& operator[](int i) const { return std::array<S, N>::operator[](static_cast<size_t>(i)); }
};

struct CtxS {
  ibv_context* c = nullptr;
  ibv_gid gid{};
  ibv_mtu mtu = IBV_MTU_1024;  // the port's active MTU
};
struct PdS {
  ibv_pd* p = nullptr;
  int ctx = -1;
};
struct MrS {
  ibv_mr* m = nullptr;
  int pd = -1, ctx = -1;
  uint64_t iova = 0;  // the addresses SGEs and remote accesses use
  uint32_t key = 0;   // kept after deregistration: a stale key is a valid number
};
struct ChS {
  ibv_comp_channel* ch = nullptr;
  int ctx = -1;
};
struct CqS {
  ibv_cq* cq = nullptr;
  int ctx = -1, ch = -1;
};
struct SrqS {
  ibv_srq* s = nullptr;
  int pd = -1, ctx = -1;
  uint64_t serial = 0;
  ibv_srq_attr attr{};  // as ibv_query_srq last reported it
};
struct QpS {
  ibv_qp* q = nullptr;
  int pd = -1, ctx = -1, scq = -1, rcq = -1, srq = -1;
  uint64_t serial = 0, gen = 0;  // gen: RESETs so far
  ibv_qp_state st = IBV_QPS_RESET;
  std::vector<uint32_t> nums;  // every number it had (RESET gives a new one)
  ibv_qp_cap cap{};
  bool sig_all = false;
};

// A work request posted (accepted by ibv_post_*), until it completes.
struct Wr {
  enum Kind : uint8_t { kSend, kRecv, kSrqRecv } kind = kSend;
  uint64_t owner = 0;  // the QP's or SRQ's serial
  uint64_t gen = 0;    // the QP's generation when posted
  ibv_wr_opcode op = IBV_WR_SEND;
  bool signaled = false;
  uint64_t recv_len = 0;  // a receive's scatter length
};

class World {
 public:
  Slots<CtxS, kCtx> ctx;
  Slots<PdS, kPd> pd;
  Slots<MrS, kMr> mr;
  Slots<ChS, kCh> ch;
  Slots<CqS, kCq> cq;
  Slots<SrqS, kSrq> srq;
  Slots<QpS, kQp> qp;
  // Each MR slot's memory (lives for the input, whatever is registered).
  Slots<std::vector<uint8_t>, kMr> buf;
  uint64_t serials = 0;
  uint64_t completions = 0, successes = 0;  // polled so far
  bool trace = false;                       // print every completion

  bool pd_busy(int p) const {
    for (const MrS& m : mr)
      if (m.m != nullptr && m.pd == p) return true;
    for (const SrqS& s : srq)
      if (s.s != nullptr && s.pd == p) return true;
    for (const QpS& q : qp)
      if (q.q != nullptr && q.pd == p) return true;
    return false;
  }
  bool ch_busy(int c) const {
    for (const CqS& q : cq)
      if (q.cq != nullptr && q.ch == c) return true;
    return false;
  }
  bool cq_busy(int c) const {
    for (const QpS& q : qp)
      if (q.q != nullptr && (q.scq == c || q.rcq == c)) return true;
    return false;
  }
  bool srq_busy(int s) const {
    for (const QpS& q : qp)
      if (q.q != nullptr && q.srq == s) return true;
    return false;
  }
  bool ctx_empty(int c) const {
    for (const PdS& p : pd)
      if (p.p != nullptr && p.ctx == c) return false;
    for (const ChS& h : ch)
      if (h.ch != nullptr && h.ctx == c) return false;
    for (const CqS& q : cq)
      if (q.cq != nullptr && q.ctx == c) return false;
    return true;  // MRs, SRQs and QPs need a PD
  }
  int qp_by_serial(uint64_t s) const {
    for (int i = 0; i < kQp; ++i)
      if (qp[i].q != nullptr && qp[i].serial == s) return i;
    return -1;
  }

  // ----------------------------------------------------------- the ledger
  void posted(uint64_t id, const Wr& w) { wrs_[id] = w; }
  uint64_t next_id() { return ++ids_; }
  // A QP or SRQ is destroyed: its requests never complete (ibv_destroy_qp
  // takes its completions out of its CQs).
  void forget(Wr::Kind k, uint64_t owner) {
    for (auto it = wrs_.begin(); it != wrs_.end();) {
      const bool mine =
          k == Wr::kSrqRecv ? it->second.kind == Wr::kSrqRecv : it->second.kind != Wr::kSrqRecv;
      if (mine && it->second.owner == owner) {
        gone_.insert(it->first);
        it = wrs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // A completion polled from CQ slot c.
  void completed(int c, const ibv_wc& wc) {
    if (trace)
      std::fprintf(stderr, "verbs_fuzz: CQ%d wr %llu status %d opcode %d len %u qp %u\n", c,
                   static_cast<unsigned long long>(wc.wr_id), wc.status, wc.opcode, wc.byte_len,
                   wc.qp_num);
    auto it = wrs_.find(wc.wr_id);
    if (it == wrs_.end()) {
      VF_CHECK(gone_.count(wc.wr_id) == 0);  // a destroyed QP's or SRQ's request
      VF_CHECK(done_.count(wc.wr_id) == 0);  // completed twice
      VF_CHECK(false);                       // never posted
    }
    const Wr w = it->second;
    wrs_.erase(it);
    done_.insert(wc.wr_id);
    VF_CHECK(verbs_rules::wc_status_ok(wc.status) && ibv_wc_status_str(wc.status) != nullptr);
    const bool ok = wc.status == IBV_WC_SUCCESS;
    ++completions;
    if (ok) ++successes;
    if (w.kind == Wr::kSrqRecv) {
      // Taken by a QP of that SRQ: the completion names it and comes to its
      // receive CQ.
      bool found = false;
      for (const QpS& q : qp)
        if (q.q != nullptr && q.srq >= 0 && srq[q.srq].serial == w.owner && q.rcq == c)
          for (uint32_t n : q.nums) found |= n == wc.qp_num;
      VF_CHECK(found);
    } else {
      const int i = qp_by_serial(w.owner);
      VF_CHECK(i >= 0);
      const QpS& q = qp[i];
      VF_CHECK(c == (w.kind == Wr::kSend ? q.scq : q.rcq));
      bool named = false;
      for (uint32_t n : q.nums) named |= n == wc.qp_num;
      VF_CHECK(named);
      // An unsignalled request completes only in error.
      if (w.kind == Wr::kSend) VF_CHECK(w.signaled || !ok);
    }
    if (!ok) return;
    if (w.kind == Wr::kSend) {
      VF_CHECK(verbs_rules::send_wc_opcode_ok(w.op, wc.opcode));
    } else {
      VF_CHECK(wc.opcode == IBV_WC_RECV || wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
      if (wc.opcode == IBV_WC_RECV) VF_CHECK(wc.byte_len <= w.recv_len);
      if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) VF_CHECK((wc.wc_flags & IBV_WC_WITH_IMM) != 0);
    }
  }
  // Requests that must still complete: every receive and signalled send
  // posted to a live QP since its last RESET.
  size_t must_left() const {
    size_t n = 0;
    for (const auto& [id, w] : wrs_) {
      if (w.kind == Wr::kSrqRecv || (w.kind == Wr::kSend && !w.signaled)) continue;
      const int i = qp_by_serial(w.owner);
      if (i >= 0 && qp[i].gen == w.gen) ++n;
    }
    return n;
  }
  void clear_ledger() {
    wrs_.clear();
    gone_.clear();
    done_.clear();
    ids_ = 0;
    completions = successes = 0;
  }
  size_t posted_count() const { return static_cast<size_t>(ids_); }

 private:
  std::unordered_map<uint64_t, Wr> wrs_;
  std::unordered_set<uint64_t> gone_, done_;
  uint64_t ids_ = 0;
};

}  // namespace dpdat::fuzz::verbs_world
