// dpdat-engine-perf in one process: two endpoints over the in-process
// net_ring link, progressed inline or by one engine thread each.

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <thread>

#include "common.hpp"
#include "dpdk/eal.hpp"

namespace dpdat::engine_perf {

void print_lat(size_t n, uint64_t iters, std::vector<double>& samples) {
  std::sort(samples.begin(), samples.end());
  auto pct = [&](double p) {
    return samples[static_cast<size_t>(p * static_cast<double>(samples.size() - 1))];
  };
  double sum = 0;
  for (double v : samples) sum += v;
  std::printf(" %-10zu %-12" PRIu64 " %-10.2f %-10.2f %-10.2f %-10.2f %-10.2f\n", n, iters,
              samples.front(), pct(0.5), sum / static_cast<double>(samples.size()), pct(0.99),
              samples.back());
  g_lat.push_back({{"size", n},
                   {"iters", iters},
                   {"half_round_trip", true},
                   {"min_us", samples.front()},
                   {"median_us", pct(0.5)},
                   {"avg_us", sum / static_cast<double>(samples.size())},
                   {"p99_us", pct(0.99)},
                   {"max_us", samples.back()}});
}

namespace {

template <typename Poll>
bool run_bw_to(dpdk::Endpoint& req, dpdk::Endpoint* resp, const Reg& src, BwTarget dst,
               uint32_t dst_lmr, size_t n, uint64_t iters, const Options& o, Poll poll,
               Poster preq = {}, Poster presp = {}) {
  const bool send = o.op == "send";
  // SEND needs receives: posted here when the receiver is in this process,
  // by the peer (dpdat-engine-perf --server keeps its receive queue full) otherwise.
  const bool local_recvs = send && resp != nullptr;
  uint64_t posted = 0, completed = 0, recvs = 0;
  const uint32_t kSig = 16;
  std::vector<uint64_t> stamps;
  stamps.reserve(iters / kSig + 2);
  const uint64_t t0 = now_ns();
  const uint64_t deadline = t0 + 60'000'000'000ull;
  rc::SendWr w = rdma_wr(op_of(o), src, dst, 0, n);
  uint32_t spins = 0;
  while (completed < iters) {
    if (local_recvs) {
      while (recvs < iters && recvs < posted + o.tx_depth && recvs - posted < 200) {
        rc::RecvWr r;
        r.num_sge = 1;
        r.sge[0] = rc::Sge{dst_lmr, dst.va, n};
        if (!presp.recv(resp->qp, r)) break;
        ++recvs;
      }
    }
    while (posted < iters && posted - completed < o.tx_depth && (!local_recvs || posted < recvs)) {
      w.flags = ((posted + 1) % kSig == 0 || posted + 1 == iters) ? rc::wr_flag::kSignaled : 0u;
      if (!preq.send(req.qp, w)) break;
      ++posted;
    }
    poll();
    rc::Completion c;
    while (req.scq->pop(&c)) {
      if (c.status != rc::WcStatus::kSuccess) {
        std::fprintf(stderr, "completion error: %.*s\n",
                     static_cast<int>(rc::wc_status_name(c.status).size()),
                     rc::wc_status_name(c.status).data());
        return false;
      }
      completed = std::min(iters, (completed / kSig + 1) * kSig);
      stamps.push_back(now_ns());
    }
    if (resp != nullptr)
      while (resp->rcq->pop(&c)) {
      }
    if ((++spins & 1023u) == 0 && now_ns() > deadline) {  // a clock read per 1024 polls
      std::fprintf(stderr, "timed out\n");
      return false;
    }
  }
  const uint64_t total_ns = now_ns() - t0;
  const double secs = static_cast<double>(total_ns) / 1e9;
  // Peak: the best rate over any span of at least 1/20 of the run (and
  // 100 us), so single polls that happen to complete a batch do not count.
  const uint64_t span = std::max<uint64_t>(total_ns / 20, 100'000);
  double peak = 0;
  for (size_t i = 0, j = 0; i < stamps.size(); ++i) {
    while (j < stamps.size() && stamps[j] - stamps[i] < span) ++j;
    if (j == stamps.size()) break;
    const double dt = static_cast<double>(stamps[j] - stamps[i]) / 1e9;
    peak = std::max(peak, static_cast<double>((j - i) * kSig * n) / dt);
  }
  const double avg = static_cast<double>(iters * n) / secs;
  if (peak < avg) peak = avg;
  std::printf(" %-10zu %-12" PRIu64 " %-16.2f %-16.2f %-14.2f %-12.4f\n", n, iters, peak * 8 / 1e9,
              avg * 8 / 1e9, avg / 1e6, static_cast<double>(iters) / secs / 1e6);
  g_bw.push_back({{"size", n},
                  {"iters", iters},
                  {"avg_mbs", avg / 1048576.0},
                  {"peak_mbs", peak / 1048576.0},
                  {"msg_rate_mpps", static_cast<double>(iters) / secs / 1e6}});
  return true;
}

bool run_bw(dpdk::Loopback& lo, const Options& o, size_t n, uint64_t iters,
            rc::EngineRunner* ra = nullptr, rc::EngineRunner* rb = nullptr) {
  Reg src, dst;
  if (!reg(lo.a(), n, &src) || !reg(lo.b(), n, &dst)) return false;
  if (ra != nullptr)
    return run_bw_to(
        lo.a(), &lo.b(), src, BwTarget{dst.va(), dst.lmr}, dst.lmr, n, iters, o,
        [] { std::this_thread::yield(); }, Poster{ra}, Poster{rb});
  return run_bw_to(lo.a(), &lo.b(), src, BwTarget{dst.va(), dst.lmr}, dst.lmr, n, iters, o,
                   [&] { lo.poll(); });
}

// Latency: ping-pong of RDMA WRITEs; each side waits for the peer's write to
// land in memory (polling the last byte), as perftest's write_lat does.
bool run_lat(dpdk::Loopback& lo, const Options& o, size_t n, uint64_t iters,
             rc::EngineRunner* ra = nullptr, rc::EngineRunner* rb = nullptr) {
  (void)o;
  Reg a_src, a_dst, b_src, b_dst;
  if (!reg(lo.a(), n, &a_src) || !reg(lo.a(), n, &a_dst) || !reg(lo.b(), n, &b_src) ||
      !reg(lo.b(), n, &b_dst))
    return false;
  const Poster pa{ra}, pb{rb};
  auto wait = [&](auto pred) {
    const uint64_t end = now_ns() + 1'000'000'000;
    while (!pred()) {
      if (now_ns() > end) return false;
      if (ra != nullptr) {
        std::this_thread::yield();
      } else {
        lo.poll();
      }
    }
    return true;
  };
  const size_t last = n == 0 ? 0 : n - 1;
  std::vector<double> samples;
  samples.reserve(iters);
  rc::Completion c;
  for (uint64_t i = 0; i < iters + 100; ++i) {  // 100 warm-up rounds
    const uint8_t tag = static_cast<uint8_t>(i % 250 + 1);
    a_src.bytes[last] = tag;
    const uint64_t t0 = now_ns();
    if (!pa.send(lo.a().qp, make_wr(Options{}, a_src, b_dst, std::max<size_t>(n, 1), false)))
      return false;
    if (!wait([&] { return peek(b_dst.bytes[last]) == tag; })) return false;
    b_src.bytes[last] = tag;
    if (!pb.send(lo.b().qp, make_wr(Options{}, b_src, a_dst, std::max<size_t>(n, 1), false)))
      return false;
    if (!wait([&] { return peek(a_dst.bytes[last]) == tag; })) return false;
    const uint64_t t1 = now_ns();
    if (i >= 100) samples.push_back(static_cast<double>(t1 - t0) / 2e3);  // half round trip, us
    while (lo.a().scq->pop(&c) || lo.b().scq->pop(&c)) {
    }
  }
  if (ra == nullptr)  // let the unsignalled WRITEs' ACKs drain before the next size
    lo.run_until([&] { return lo.a().engine->idle() && lo.b().engine->idle(); }, 1'000'000'000);
  print_lat(n, iters, samples);
  return true;
}

}  // namespace

int run_local(const Options& o) {
  const auto& eal = dpdk::eal_init();
  if (!eal.ok) {
    std::fprintf(stderr, "dpdat-engine-perf: %s\n", eal.error.c_str());
    return 1;
  }
  dpdk::Loopback lo;
  rc::QpConfig q;
  q.pmtu = o.pmtu;
  q.selective_repeat = !o.gbn;
  q.cc.mode = o.cc;
  q.sq_depth = std::max<uint32_t>(o.tx_depth * 2, 256);
  q.rq_depth = 512;
  if (o.window != 0) q.window = o.window;
  std::string err;
  if (!lo.open(q, &err)) {
    std::fprintf(stderr, "dpdat-engine-perf: %s\n", err.c_str());
    return 1;
  }
  std::unique_ptr<rc::EngineRunner> ra, rb;
  if (o.thread_progress) {
    // One engine thread per endpoint; this thread only posts and reaps.
    rc::RunnerConfig rcfg;
    rcfg.policy = rc::IdlePolicy::kBackoff;
    ra = std::make_unique<rc::EngineRunner>(*lo.a().engine, rcfg, &now_ns);
    rb = std::make_unique<rc::EngineRunner>(*lo.b().engine, rcfg, &now_ns);
    ra->start();
    rb->start();
  }
  std::printf("dpdat-engine-perf: RDMA %s, in-process net_ring link, %s progress, PMTU %u, %s\n",
              o.op.c_str(), o.thread_progress ? "engine-thread" : "inline",
              lo.a().qp->config().pmtu, eal.hugepages ? "hugepages" : "no hugepages (--no-huge)");
  if (o.bw) {
    std::printf("\n %-10s %-12s %-16s %-16s %-14s %-12s\n", "#bytes", "#iterations",
                "BW peak[Gb/s]", "BW average[Gb/s]", "BW avg[MB/s]", "MsgRate[Mpps]");
    for (size_t n : o.sizes) {
      const uint64_t it =
          o.iters != 0
              ? o.iters
              : std::clamp<uint64_t>((512ull << 20) / std::max<size_t>(n, 64), 1000, 100000);
      if (!run_bw(lo, o, n, it, ra.get(), rb.get())) return 1;
    }
  }
  if (o.lat) {
    if (o.op != "write") {
      std::printf("\n(latency is measured with RDMA WRITE ping-pong only)\n");
    }
    std::printf("\n %-10s %-12s %-10s %-10s %-10s %-10s %-10s\n", "#bytes", "#iterations",
                "t_min[us]", "t_median", "t_avg", "t_p99", "t_max");
    const std::vector<size_t> lat_sizes = o.sizes.size() == 1 ? o.sizes : std::vector<size_t>{8};
    for (size_t n : lat_sizes)
      if (!run_lat(lo, o, n, o.iters != 0 ? o.iters : 10000, ra.get(), rb.get())) return 1;
  }
  return finish(o, 0);
}

}  // namespace dpdat::engine_perf
