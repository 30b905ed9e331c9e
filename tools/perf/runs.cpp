#include "runs.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "config.hpp"
#include "sysinfo.hpp"

namespace dpdat::perf {

Layout layout_for(const Options& o) {
  Layout L;
  for (uint64_t s : o.sizes) L.slice = std::max<size_t>(L.slice, s);
  L.slice = std::max<size_t>(L.slice, 8);
  if (o.atomic()) L.slice = std::max<size_t>(L.slice, size_t{o.tx_depth} * kAtomicWord);
  L.qps = o.qps;
  L.churn = o.churn;
  return L;
}

uint64_t bw_iters(const Options& o, size_t n) {
  if (o.iters != 0) return o.iters;
  const uint64_t total =
      std::clamp<uint64_t>((512ull << 20) / std::max<size_t>(n, 64), 1000, 100000);
  return std::max<uint64_t>(total / o.qps, 100);
}

bool spin_until(const std::function<bool()>& pred, const std::function<void()>& poll,
                uint64_t limit_ns) {
  const uint64_t end = now_ns() + limit_ns;
  uint32_t spins = 0;
  while (!pred()) {
    if (poll) poll();
    if ((++spins & 255u) == 0 && now_ns() > end) return false;
  }
  return true;
}

bool drive_side(Side& s, std::string* err) {
  std::vector<Done> d;
  for (size_t k = 0; k < s.qps(); ++k) {
    if (s.reap(s.conn(k).req, &d, err) < 0 || s.reap(s.conn(k).rcv, &d, err) < 0) return false;
    d.clear();
  }
  return true;
}

void fill_pattern(Side& s, const Layout& L, size_t n, uint8_t salt) {
  for (size_t k = 0; k < L.qps; ++k) {
    uint8_t* p = s.data() + L.src(k);
    for (size_t i = 0; i < n; ++i) p[i] = pattern_byte(i, k, salt);
  }
}

bool verify_slices(Side& s, const Layout& L, size_t n, const DAT_RMR_TRIPLET& peer,
                   const std::function<void()>& drive, std::string* err, uint64_t limit_ns) {
  for (size_t k = 0; k < L.qps; ++k) {
    std::memset(s.data() + L.scratch(k), 0, n);
    const DAT_RETURN r = s.read(k, L.scratch(k), n, peer, L.landing(k), 0x5645, true);
    if (r != DAT_SUCCESS) {
      *err = dat_error("dat_ep_post_rdma_read", r);
      return false;
    }
    std::vector<Done> d;
    bool failed = false;
    if (!spin_until(
            [&] {
              if (s.reap(s.conn(k).req, &d, err) < 0) failed = true;
              return failed || std::any_of(d.begin(), d.end(),
                                           [](const Done& x) { return x.cookie == 0x5645; });
            },
            drive, limit_ns) ||
        failed) {
      if (!failed) *err = "verify: the read-back never completed";
      return false;
    }
    if (std::memcmp(s.data() + L.scratch(k), s.data() + L.src(k), n) != 0) {
      *err = "verify: QP " + std::to_string(k) + " landed bytes differ from the source";
      return false;
    }
  }
  return true;
}

namespace {

// The operation, decided once per run: comparing --op's text on every post
// cost the client a tenth of its CPU at 64 B.
enum class PostOp { kWrite, kRead, kFetchAdd, kCmpSwap, kSend };

PostOp post_op(const Options& o) {
  if (o.op == "write") return PostOp::kWrite;
  if (o.op == "read") return PostOp::kRead;
  if (o.op == "atomic-fadd") return PostOp::kFetchAdd;
  return o.op == "atomic-cswap" ? PostOp::kCmpSwap : PostOp::kSend;
}

DAT_RETURN post_one(PostOp op, Flow& f, const Options& o, const Layout& L, size_t n,
                    uint64_t cookie, bool signal) {
  switch (op) {
    case PostOp::kWrite:
      return f.s->write(f.k, L.src(f.k), n, f.dst, L.landing(f.k), cookie, signal);
    case PostOp::kRead:
      return f.s->read(f.k, L.landing(f.k), n, f.dst, L.src(f.k), cookie, signal);
    case PostOp::kFetchAdd:
    case PostOp::kCmpSwap:
      return post_atomic(f, o, L, cookie, signal, op == PostOp::kCmpSwap);
    case PostOp::kSend:
      break;
  }
  return f.s->send(f.k, L.src(f.k), n, cookie, signal);
}

}  // namespace

namespace {

bool run_bw_one(std::vector<Flow>& flows, const Options& o, const Layout& L, size_t n,
                uint64_t iters, const std::function<void()>& drive, BwFigures* out,
                std::string* err) {
  const bool timed = o.duration > 0;
  const uint64_t kMod = o.cq_mod;
  const uint32_t depth = o.tx_depth;
  const PostOp op = post_op(o);
  // Per EP and pass: -l WRs, or (0) until tx-depth WRs are in flight, as
  // perftest's loop posts before it polls the completion queue.
  const uint32_t per_pass = o.post_list != 0 ? o.post_list : depth;
  if (o.atomic()) {
    std::vector<uint64_t> base;
    if (!atomic_words(flows, L, drive, &base, err)) return false;
    for (size_t i = 0; i < flows.size(); ++i) flows[i].base = base[i];
  }
  const uint64_t t0 = now_ns();
  const uint64_t warm_ns =
      timed ? static_cast<uint64_t>(std::clamp(o.duration * 0.2, 0.2, 2.0) * 1e9) : 0;
  const uint64_t t_measure = t0 + warm_ns;
  const uint64_t t_end = t_measure + static_cast<uint64_t>(o.duration * 1e9);
  const uint64_t deadline = (timed ? t_end : t0) + static_cast<uint64_t>(o.round_limit * 1e9);
  for (Flow& f : flows) f.posted = f.completed = f.recvs = f.recv_done = 0;

  bool measuring = !timed;
  CpuMark cpu0 = CpuMark::now();
  uint64_t m_t0 = t0, m_msgs0 = 0, m_t1 = 0, m_msgs1 = 0;
  std::vector<std::pair<uint64_t, uint64_t>> stamps;  // (time, messages completed)
  stamps.reserve(1 << 16);
  std::vector<Done> done;
  uint64_t total_done = 0;
  uint32_t spins = 0;
  for (;;) {
    const uint64_t now = (++spins & 63u) == 0 || timed ? now_ns() : 0;
    if (timed && !measuring && now >= t_measure) {
      measuring = true;
      cpu0 = CpuMark::now();
      m_t0 = now;
      m_msgs0 = total_done;
    }
    const bool stop_posting = timed && now >= t_end;
    if (stop_posting && m_t1 == 0) {
      m_t1 = now;
      m_msgs1 = total_done;
    }
    bool all_done = true;
    for (Flow& f : flows) {
      const uint64_t quota =
          timed ? (stop_posting ? (f.posted + kMod - 1) / kMod * kMod : ~0ull) : iters;
      if (f.rs != nullptr) {  // SEND in one process: receives ahead of the sends
        std::vector<Done> rd;
        const int got = f.rs->reap(f.rs->conn(f.rk).rcv, &rd, err);
        if (got < 0) return false;
        f.recv_done += static_cast<uint64_t>(got);
        while (f.recvs < quota && f.recvs - f.recv_done < depth) {
          // Full-slice receives: one left over from a smaller size still fits.
          if (f.rs->recv(f.rk, L.landing(f.rk), L.slice, f.recvs) != DAT_SUCCESS) break;
          ++f.recvs;
        }
      }
      for (uint32_t b = 0; b < per_pass && f.posted < quota && f.posted - f.completed < depth &&
                           (f.rs == nullptr || f.posted < f.recvs);
           ++b) {
        const uint64_t next = f.posted + 1;
        const DAT_RETURN r = post_one(op, f, o, L, n, next, next % kMod == 0 || next == quota);
        if (DAT_GET_TYPE(r) == DAT_INSUFFICIENT_RESOURCES) break;
        if (r != DAT_SUCCESS) {
          *err = dat_error("dat_ep_post", r);
          return false;
        }
        f.posted = next;
      }
      done.clear();
      if (f.s->reap(f.s->conn(f.k).req, &done, err) < 0) return false;
      for (const Done& d : done)
        if (d.cookie > f.completed) {
          total_done += d.cookie - f.completed;
          f.completed = d.cookie;
        }
      if (!done.empty() && measuring && (m_t1 == 0)) stamps.emplace_back(now_ns(), total_done);
      if (f.completed < quota || (f.rs != nullptr && f.recv_done < f.completed)) all_done = false;
    }
    if (drive) drive();
    if (all_done) break;
    if ((spins & 1023u) == 0 && now_ns() > deadline) {
      *err = "bandwidth run timed out (" + std::to_string(static_cast<int>(o.round_limit)) +
             " s; " + std::to_string(total_done) + " messages completed)";
      return false;
    }
  }
  const uint64_t t_fin = now_ns();
  const CpuMark cpu1 = CpuMark::now();
  if (!timed) {
    m_t1 = t_fin;
    m_msgs1 = total_done;
  }
  const uint64_t msgs = m_msgs1 - m_msgs0;
  const double secs = static_cast<double>(m_t1 - m_t0) / 1e9;
  out->size = n;
  out->iters = msgs;
  out->secs = secs;
  out->avg_mbs = static_cast<double>(msgs * n) / secs / 1048576.0;
  out->msg_rate_mpps = static_cast<double>(msgs) / secs / 1e6;
  out->cpu_local = cpu1.pct_since(cpu0);
  // Peak: the best rate over any span of at least 1/20 of the run (and 100 µs).
  const uint64_t span = std::max<uint64_t>((m_t1 - m_t0) / 20, 100'000);
  double peak = 0;
  for (size_t i = 0, j = 0; i < stamps.size(); ++i) {
    while (j < stamps.size() && stamps[j].first - stamps[i].first < span) ++j;
    if (j == stamps.size()) break;
    const double dt = static_cast<double>(stamps[j].first - stamps[i].first) / 1e9;
    peak = std::max(peak, static_cast<double>((stamps[j].second - stamps[i].second) * n) / dt);
  }
  out->peak_mbs = std::max(peak / 1048576.0, out->avg_mbs);
  out->per_qp_msgs.clear();
  for (const Flow& f : flows) out->per_qp_msgs.push_back(f.completed);
  if (o.atomic()) {
    if (!atomic_verify(flows, o, L, drive, err)) return false;
    out->verified = true;
  }
  return true;
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(cpu), &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

}  // namespace

bool run_bw(std::vector<Flow>& flows, const Options& o, const Layout& L, size_t n, uint64_t iters,
            const std::function<void()>& drive, BwFigures* out, std::string* err) {
  const size_t nt = std::min<size_t>(o.threads, flows.size());
  // One process drives its peer's interface from this thread (drive): one thread.
  if (nt <= 1 || drive) return run_bw_one(flows, o, L, n, iters, drive, out, err);
  std::vector<int> cpus;
  if (!o.cpus.empty()) (void)dat::parse_cpu_list(o.cpus, &cpus);
  std::vector<std::vector<Flow>> part(nt);
  for (size_t k = 0; k < flows.size(); ++k) part[k % nt].push_back(flows[k]);
  std::vector<BwFigures> fig(nt);
  std::vector<std::string> errs(nt);
  std::vector<char> ok(nt, 0);
  const CpuMark cpu0 = CpuMark::now();
  std::vector<std::thread> th;
  for (size_t t = 0; t < nt; ++t)
    th.emplace_back([&, t] {
      if (t < cpus.size()) pin_to(cpus[t]);
      ok[t] = run_bw_one(part[t], o, L, n, iters, {}, &fig[t], &errs[t]) ? 1 : 0;
    });
  for (auto& x : th) x.join();
  for (size_t t = 0; t < nt; ++t)
    if (ok[t] == 0) {
      *err = errs[t];
      return false;
    }
  for (size_t k = 0; k < flows.size(); ++k) flows[k] = part[k % nt][k / nt];
  // The threads ran side by side: messages add up over the longest run.
  out->size = n;
  out->iters = 0;
  out->secs = 0;
  out->verified = o.atomic();
  for (const BwFigures& f : fig) {
    out->iters += f.iters;
    out->secs = std::max(out->secs, f.secs);
    out->verified = out->verified && f.verified;
  }
  out->avg_mbs = static_cast<double>(out->iters * n) / out->secs / 1048576.0;
  out->msg_rate_mpps = static_cast<double>(out->iters) / out->secs / 1e6;
  // No peak across threads (their best spans need not coincide): the average.
  out->peak_mbs = out->avg_mbs;
  out->cpu_local = CpuMark::now().pct_since(cpu0);
  out->per_qp_msgs.clear();
  for (size_t k = 0; k < flows.size(); ++k)
    out->per_qp_msgs.push_back(fig[k % nt].per_qp_msgs[k / nt]);
  return true;
}

}  // namespace dpdat::perf
