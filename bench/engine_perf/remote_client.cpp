// dpdat-engine-perf across processes, the active side: bandwidth of every
// size on every QP (verified on request), then the latency on QP 0.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

#include <pthread.h>
#include <sched.h>

#include "remote.hpp"

namespace dpdat::engine_perf {

namespace {

// The QPs `ks` of one thread, each moving its quota of n-byte messages into
// its own slice; `drive` progresses what this thread must (nothing when
// engine threads do).  (time, messages done) stamps, for the peak.
struct BwPart {
  std::vector<size_t> ks;
  std::vector<std::pair<uint64_t, uint64_t>> stamps;
  uint64_t done = 0;
  bool ok = true;
};

void bw_loop(Multi& m, const Reg& src, size_t n, const std::vector<uint64_t>& quota,
             const Options& o, const std::function<void()>& drive, bool back_off, BwPart* part) {
  const size_t nq = m.qps.size();
  const uint32_t kSig = 16;
  // --tx-depth WRs in flight per posting thread, shared by its QPs: one
  // thread posting for every QP keeps as many in flight as with one QP, and
  // each of --threads' threads as many as one engine alone.
  const uint32_t depth =
      std::max<uint32_t>(o.tx_depth / static_cast<uint32_t>(part->ks.size()), kSig);
  std::vector<uint64_t> posted(nq, 0), completed(nq, 0);
  uint64_t want = 0;
  for (size_t k : part->ks) want += quota[k];
  part->stamps.reserve(want / kSig + 2);
  const uint64_t deadline = now_ns() + 60'000'000'000ull;
  uint32_t idle_passes = 0;
  while (part->done < want) {
    bool progress = false;
    for (size_t k : part->ks) {
      rc::SendWr w = rdma_wr(op_of(o), src, {m.peer.buf_va, m.peer.rkey}, k * n, n);
      const Poster p = m.poster(k);
      while (posted[k] < quota[k] && posted[k] - completed[k] < depth) {
        w.flags = ((posted[k] + 1) % kSig == 0 || posted[k] + 1 == quota[k])
                      ? rc::wr_flag::kSignaled
                      : 0u;
        if (!p.send(m.qps[k], w)) break;
        ++posted[k];
      }
    }
    if (drive) drive();
    for (size_t k : part->ks) {
      rc::Completion c;
      while (m.scq[k]->pop(&c)) {
        if (c.status != rc::WcStatus::kSuccess) {
          std::fprintf(stderr, "completion error on QP %zu: %.*s\n", k,
                       static_cast<int>(rc::wc_status_name(c.status).size()),
                       rc::wc_status_name(c.status).data());
          part->ok = false;
          return;
        }
        const uint64_t before = completed[k];
        completed[k] = std::min(quota[k], (completed[k] / kSig + 1) * kSig);
        part->done += completed[k] - before;
        part->stamps.emplace_back(now_ns(), part->done);
        progress = true;
      }
    }
    if (now_ns() > deadline) {
      std::fprintf(stderr, "timed out\n");
      part->ok = false;
      return;
    }
    // Engine threads do the work: back off rather than compete for a CPU.
    if (back_off && !progress && ++idle_passes > 64) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      idle_passes = 0;
    }
  }
}

// The CPUs this process may run on, in order (--threads pins thread t to
// the t-th).
std::vector<size_t> allowed_cpus() {
  std::vector<size_t> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (size_t c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// M QPs, each moving `iters / M` messages of n bytes into its own slice:
// from this thread (engine threads or inline progress), or (--threads) from
// a thread per engine that drives it.
bool run_multi_bw(Multi& m, const Reg& src, size_t n, uint64_t iters, const Options& o) {
  const size_t nq = m.qps.size();
  std::vector<uint64_t> quota(nq, iters / nq);
  quota[0] += iters % nq;
  const bool threads = o.per_engine_threads;
  const size_t ne = threads ? m.engines.size() : 1;
  std::vector<BwPart> parts(ne);
  for (size_t k = 0; k < nq; ++k) parts[threads ? m.engine_of(k) : 0].ks.push_back(k);
  const uint64_t t0 = now_ns();
  if (!threads) {
    bw_loop(m, src, n, quota, o,
            m.runners.empty() ? std::function<void()>([&] { m.poll_inline(); })
                              : std::function<void()>(),
            !m.runners.empty(), &parts[0]);
  } else {
    const std::vector<size_t> cpus = allowed_cpus();
    std::vector<std::thread> ts;
    for (size_t e = 0; e < ne; ++e)
      ts.emplace_back([&, e] {
        if (cpus.size() >= ne) {
          cpu_set_t one;
          CPU_ZERO(&one);
          CPU_SET(cpus[e], &one);
          (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
        }
        (void)dpdk::register_thread();
        rc::Engine& eng = *m.engines[e];
        bw_loop(
            m, src, n, quota, o, [&eng] { eng.poll(now_ns()); }, false, &parts[e]);
      });
    for (auto& t : ts) t.join();
  }
  const uint64_t total_ns = now_ns() - t0;
  for (const BwPart& p : parts)
    if (!p.ok) return false;
  // Every thread's stamps on one time line: (time, messages done by all).
  std::vector<std::pair<uint64_t, uint64_t>> stamps;
  for (const BwPart& p : parts) {
    uint64_t last = 0;
    for (const auto& [t, d] : p.stamps) {
      stamps.emplace_back(t, d - last);
      last = d;
    }
  }
  std::sort(stamps.begin(), stamps.end());
  uint64_t sum = 0;
  for (auto& s : stamps) s.second = sum += s.second;
  const double secs = static_cast<double>(total_ns) / 1e9;
  // Peak: the best rate over any span of at least 1/20 of the run (and 100 us).
  const uint64_t span = std::max<uint64_t>(total_ns / 20, 100'000);
  double peak = 0;
  for (size_t i = 0, j = 0; i < stamps.size(); ++i) {
    while (j < stamps.size() && stamps[j].first - stamps[i].first < span) ++j;
    if (j == stamps.size()) break;
    const double dt = static_cast<double>(stamps[j].first - stamps[i].first) / 1e9;
    peak = std::max(peak, static_cast<double>((stamps[j].second - stamps[i].second) * n) / dt);
  }
  const double avg = static_cast<double>(iters * n) / secs;
  peak = std::max(peak, avg);
  std::printf(" %-10zu %-12" PRIu64 " %-16.2f %-16.2f %-14.2f %-12.4f\n", n, iters, peak * 8 / 1e9,
              avg * 8 / 1e9, avg / 1e6, static_cast<double>(iters) / secs / 1e6);
  g_bw.push_back({{"size", n},
                  {"iters", iters},
                  {"avg_mbs", avg / 1048576.0},
                  {"peak_mbs", peak / 1048576.0},
                  {"msg_rate_mpps", static_cast<double>(iters) / secs / 1e6}});
  return true;
}

// Reads n bytes at remote_off of the peer's buffer back through QP k into
// slice k of `into`.
bool multi_read_back(Multi& m, Reg& into, size_t n, size_t k, size_t remote_off) {
  rc::SendWr w = rdma_wr(rc::WrOp::kRead, into, {m.peer.buf_va, m.peer.rkey}, k * n, n);
  w.remote_va = m.peer.buf_va + remote_off;
  w.flags = rc::wr_flag::kSignaled;
  const uint64_t end = now_ns() + 10'000'000'000ull;
  while (!m.poster(k).send(m.qps[k], w)) {
    if (now_ns() > end) return false;
    std::this_thread::yield();
  }
  rc::Completion c;
  while (!m.scq[k]->pop(&c)) {
    if (now_ns() > end) return false;
    if (m.runners.empty()) {
      m.poll_inline();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  return c.status == rc::WcStatus::kSuccess;
}

// The client's latency test on QP 0: WRITE a tag into the server's buffer,
// wait for the server's WRITE of it into our pong area.
bool run_multi_lat(Multi& m, Reg& src, size_t n, uint64_t iters) {
  const size_t last = n - 1;
  uint8_t* pong = m.buf.bytes.data() + m.buf.bytes.size() / 2;
  std::memset(pong, 0, n);
  std::vector<double> samples;
  samples.reserve(iters);
  rc::SendWr w = rdma_wr(rc::WrOp::kWrite, src, {m.peer.buf_va, m.peer.rkey}, 0, n);
  w.flags = 0;
  for (uint64_t i = 0; i < iters + 100; ++i) {  // 100 warm-up rounds
    const uint8_t tag = static_cast<uint8_t>(i % 250 + 1);
    src.bytes[last] = tag;
    const uint64_t t0 = now_ns();
    while (!m.poster(0).send(m.qps[0], w)) m.poll_or_yield();
    const uint64_t end = t0 + 2'000'000'000ull;
    uint32_t spins = 0;
    while (peek(pong[last]) != tag) {
      m.poll_or_yield();
      if ((++spins & 255u) == 0 && now_ns() > end) {
        std::fprintf(stderr, "dpdat-engine-perf: pong %" PRIu64 " never arrived\n", i);
        return false;
      }
    }
    if (i >= 100) samples.push_back(static_cast<double>(now_ns() - t0) / 2e3);
    rc::Completion cc;
    while (m.scq[0]->pop(&cc)) {
    }
  }
  std::printf("\n %-10s %-12s %-10s %-10s %-10s %-10s %-10s\n", "#bytes", "#iterations",
              "t_min[us]", "t_median", "t_avg", "t_p99", "t_max");
  print_lat(n, iters, samples);
  return true;
}

}  // namespace

// One path for N >= 1 QPs on M >= 1 engines: bandwidth of every size on
// every QP, then the latency on QP 0.
int run_multi_client(const Options& o, size_t max_size) {
  Multi m;
  tools::Oob oob;
  if (!multi_setup(o, max_size, &m, &oob)) return 1;
  std::printf("dpdat-engine-perf: RDMA %s to %s over %s, PMTU %u, %zu QPs on %zu engines (%s)\n",
              o.op.c_str(), o.client_of.c_str(), o.vdev.c_str(), m.qps[0]->config().pmtu,
              m.qps.size(), m.engines.size(),
              m.runners.empty() ? "inline progress" : "engine threads, idle back-off");
  Reg src, back;
  if (!reg(*m.mr, 1, max_size, &src) || !reg(*m.mr, 1, max_size, &back)) return 1;
  int rc_ = 0;
  const size_t nq = m.qps.size();
  uint32_t ready = 0;
  if (o.bw) {
    std::printf("\n %-10s %-12s %-16s %-16s %-14s %-12s\n", "#bytes", "#iterations",
                "BW peak[Gb/s]", "BW average[Gb/s]", "BW avg[MB/s]", "MsgRate[Mpps]");
    for (size_t n : o.sizes) {
      const size_t share = Multi::recv_slice(m.peer.buf_len, nq);
      if (n * nq > max_size || (o.op == "send" && n > share)) {
        std::fprintf(stderr, "dpdat-engine-perf: %zu QPs x %zu B exceed the %zu-byte buffers\n", nq,
                     n, max_size);
        rc_ = 1;
        break;
      }
      // Each QP's slice differs from the others', so a frame placed in the
      // wrong slice shows.
      for (size_t i = 0; i < nq * n; ++i)
        src.bytes[i] = static_cast<uint8_t>((i * 7 + 3) ^ (i / std::max<size_t>(n, 1) * 0x5B + 1));
      const Cmd c{kCmdBw, o.op == "send" ? kOpSend : o.op == "read" ? kOpRead : kOpWrite, n, 0};
      if (!oob.send(c) || !oob.recv(&ready)) return 1;  // the server is prepared
      const uint64_t it =
          o.iters != 0 ? o.iters
                       : std::clamp<uint64_t>((256ull << 20) / std::max<size_t>(n, 64), 200, 50000);
      if (!run_multi_bw(m, src, n, it, o)) rc_ = 1;
      if (rc_ == 0 && o.verify) {
        bool ok = true;
        for (size_t k = 0; k < nq && ok; ++k) {
          // WRITE: slice k of the peer; SEND: QP k's share, where its
          // receives land; READ: slice k, the server's initial pattern.
          ok = multi_read_back(m, back, n, k, o.op == "send" ? k * share : k * n);
          for (size_t i = k * n; i < (k + 1) * n && ok; ++i)
            ok = back.bytes[i] == (o.op == "read" ? pattern_byte(i) : src.bytes[i]);
          if (ok && o.op == "read")  // what the READs brought in
            for (size_t i = k * n; i < (k + 1) * n && ok; ++i) ok = src.bytes[i] == pattern_byte(i);
        }
        std::printf("   verify %zu B on %zu QPs: %s\n", n, nq, ok ? "byte-exact" : "MISMATCH");
        if (!ok) rc_ = 1;
      }
      if (rc_ != 0) break;
    }
  }
  if (o.lat && rc_ == 0) {
    const size_t n = std::max<size_t>(o.sizes.size() == 1 ? o.sizes[0] : 8, 1);
    const uint64_t iters = o.iters != 0 ? o.iters : 10000;
    if (nq > 1) std::printf("\n(latency on QP 0 of %zu)\n", nq);
    const Cmd c{kCmdLat, 0, n, iters + 100};
    if (!oob.send(c) || !oob.recv(&ready)) return 1;  // the server cleared its buffer
    if (!run_multi_lat(m, src, n, iters)) rc_ = 1;
  }
  // Engines stopped before the server is told we are done; its own are
  // stopped before it answers (see run_multi_server), and we keep our port
  // open until then.
  m.drain(200'000'000);
  if (!m.report("dpdat-engine-perf")) rc_ = 1;
  const Cmd done{kCmdDone, 0, 0, 0};
  uint32_t bye = 0;
  if (oob.send(done)) oob.recv(&bye);  // returns on the answer or the server's exit
  return rc_;
}

int run_remote(const Options& in) {
  Options o = in;
  if (o.vdev.empty() || o.ip.empty()) {
    std::fprintf(stderr, "dpdat-engine-perf: --server/--client need --vdev and --ip\n");
    return 2;
  }
  size_t max_size = 4096;
  for (size_t n : o.sizes) max_size = std::max(max_size, n);
  if (o.qps == 0) o.qps = o.engines;
  if (o.engines == 0 || o.engines > rc::EngineGroup::kMaxEngines || o.qps > 64) {
    std::fprintf(stderr, "dpdat-engine-perf: --engines 1..%u, --qps 1..64\n",
                 rc::EngineGroup::kMaxEngines);
    return 2;
  }
  if (o.server && o.per_engine_threads) {
    std::fprintf(stderr,
                 "dpdat-engine-perf: --threads is the client's (the server's engines run on engine "
                 "threads)\n");
    return 2;
  }
  if (o.server) return run_multi_server(o, std::max<size_t>(max_size, 8u << 20));
  return finish(o, run_multi_client(o, std::max<size_t>(max_size, 8u << 20)));
}

}  // namespace dpdat::engine_perf
