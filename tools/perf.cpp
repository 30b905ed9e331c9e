// dpdat-perf: perftest-style bandwidth and latency for dpdat's RC transport.
//
// Default (no arguments): client and server in one process over the
// in-process net_ring link, engines progressed inline by this thread, RDMA
// WRITE bandwidth for 2 B .. 1 MiB, then the 8 B WRITE latency.
//
//   dpdat-perf [--op write|read|send] [--size N | --all] [--iters N]
//              [--lat | --bw] [--pmtu N] [--tx-depth N] [--gbn]
//
// Across processes (--server / --client ADDR over net_memif, net_af_packet,
// net_tap) arrives with the multi-process part of the DPDK transport issue;
// those flags are refused with a message until then.

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dpdk/eal.hpp"
#include "loopback.hpp"

namespace {

using namespace dpdat;

struct Options {
  std::string op = "write";
  std::vector<size_t> sizes;
  uint64_t iters = 0;  // 0: pick per size
  bool lat = false;
  bool bw = false;
  uint32_t pmtu = 1024;
  uint32_t tx_depth = 128;
  bool gbn = false;
};

void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--op write|read|send] [--size N | --all] [--iters N] [--lat | --bw]\n"
               "          [--pmtu 256..4096] [--tx-depth N] [--gbn]\n",
               argv0);
}

struct Reg {
  std::vector<uint8_t> bytes;
  uint32_t lmr = 0;
  uint64_t va() const { return reinterpret_cast<uint64_t>(bytes.data()); }
};

bool reg(tools::Endpoint& e, size_t n, Reg* r) {
  r->bytes.assign(std::max<size_t>(n, 8), 0);
  return e.mr->lmr_register(e.pz, r->bytes.data(), r->va(), r->bytes.size(), rc::priv::kAll,
                            &r->lmr);
}

rc::SendWr make_wr(const Options& o, const Reg& src, const Reg& dst, size_t n, bool signaled) {
  rc::SendWr w;
  w.op = o.op == "read" ? rc::WrOp::kRead : o.op == "send" ? rc::WrOp::kSend : rc::WrOp::kWrite;
  w.flags = signaled ? rc::wr_flag::kSignaled : 0u;
  w.num_sge = 1;
  w.sge[0] = rc::Sge{src.lmr, src.va(), n};
  w.remote_va = dst.va();
  w.rkey = dst.lmr;
  return w;
}

// Bandwidth: keep tx_depth WRs in flight, every 16th signalled.
bool run_bw(tools::Loopback& lo, const Options& o, size_t n, uint64_t iters) {
  Reg src, dst;
  if (!reg(lo.a(), n, &src) || !reg(lo.b(), n, &dst)) return false;
  const bool send = o.op == "send";
  uint64_t posted = 0, completed = 0, recvs = 0;
  const uint32_t kSig = 16;
  std::vector<uint64_t> stamps;
  stamps.reserve(iters / kSig + 2);
  const uint64_t t0 = tools::now_ns();
  uint64_t deadline = t0 + 60'000'000'000ull;
  while (completed < iters) {
    if (send) {
      while (recvs < posted + o.tx_depth && recvs < iters && lo.b().qp->recv_queue_used() < 200) {
        rc::RecvWr r;
        r.num_sge = 1;
        r.sge[0] = rc::Sge{dst.lmr, dst.va(), n};
        if (lo.b().qp->post_recv(r) != rc::Qp::PostResult::kOk) break;
        ++recvs;
      }
    }
    while (posted < iters && posted - completed < o.tx_depth && (!send || posted < recvs)) {
      const bool sig = (posted + 1) % kSig == 0 || posted + 1 == iters;
      if (lo.a().qp->post_send(make_wr(o, src, dst, n, sig)) != rc::Qp::PostResult::kOk) break;
      ++posted;
    }
    lo.poll();
    rc::Completion c;
    while (lo.a().scq->pop(&c)) {
      if (c.status != rc::WcStatus::kSuccess) {
        std::fprintf(stderr, "completion error: %.*s\n",
                     static_cast<int>(rc::wc_status_name(c.status).size()),
                     rc::wc_status_name(c.status).data());
        return false;
      }
      completed = std::min(iters, (completed / kSig + 1) * kSig);
      if (completed == iters) completed = iters;
      stamps.push_back(tools::now_ns());
    }
    while (lo.b().rcq->pop(&c)) {
    }
    if (tools::now_ns() > deadline) {
      std::fprintf(stderr, "timed out\n");
      return false;
    }
  }
  const double secs = static_cast<double>(tools::now_ns() - t0) / 1e9;
  // Peak: the best rate over any span of at least 1/20 of the run (and
  // 100 us), so single polls that happen to complete a batch do not count.
  const uint64_t span = std::max<uint64_t>((tools::now_ns() - t0) / 20, 100'000);
  double peak = 0;
  for (size_t i = 0, j = 0; i < stamps.size(); ++i) {
    while (j < stamps.size() && stamps[j] - stamps[i] < span) ++j;
    if (j == stamps.size()) break;
    const double dt = static_cast<double>(stamps[j] - stamps[i]) / 1e9;
    peak = std::max(peak, static_cast<double>((j - i) * kSig * n) / dt);
  }
  if (peak == 0)
    peak = static_cast<double>(iters * n) / (static_cast<double>(tools::now_ns() - t0) / 1e9);
  const double avg = static_cast<double>(iters * n) / secs;
  std::printf(" %-10zu %-12" PRIu64 " %-16.2f %-16.2f %-14.2f %-12.4f\n", n, iters, peak * 8 / 1e9,
              avg * 8 / 1e9, avg / 1e6, static_cast<double>(iters) / secs / 1e6);
  return true;
}

// Latency: ping-pong of RDMA WRITEs; each side waits for the peer's write to
// land in memory (polling the last byte), as perftest's write_lat does.
bool run_lat(tools::Loopback& lo, const Options& o, size_t n, uint64_t iters) {
  (void)o;
  Reg a_src, a_dst, b_src, b_dst;
  if (!reg(lo.a(), n, &a_src) || !reg(lo.a(), n, &a_dst) || !reg(lo.b(), n, &b_src) ||
      !reg(lo.b(), n, &b_dst))
    return false;
  const size_t last = n == 0 ? 0 : n - 1;
  std::vector<double> samples;
  samples.reserve(iters);
  rc::Completion c;
  for (uint64_t i = 0; i < iters + 100; ++i) {  // 100 warm-up rounds
    const uint8_t tag = static_cast<uint8_t>(i % 250 + 1);
    a_src.bytes[last] = tag;
    const uint64_t t0 = tools::now_ns();
    if (lo.a().qp->post_send(make_wr(Options{}, a_src, b_dst, std::max<size_t>(n, 1), false)) !=
        rc::Qp::PostResult::kOk)
      return false;
    if (!lo.run_until([&] { return b_dst.bytes[last] == tag; }, 1'000'000'000)) return false;
    b_src.bytes[last] = tag;
    if (lo.b().qp->post_send(make_wr(Options{}, b_src, a_dst, std::max<size_t>(n, 1), false)) !=
        rc::Qp::PostResult::kOk)
      return false;
    if (!lo.run_until([&] { return a_dst.bytes[last] == tag; }, 1'000'000'000)) return false;
    const uint64_t t1 = tools::now_ns();
    if (i >= 100) samples.push_back(static_cast<double>(t1 - t0) / 2e3);  // half round trip, us
    while (lo.a().scq->pop(&c) || lo.b().scq->pop(&c)) {
    }
  }
  // Let the unsignalled WRITEs' ACKs drain before the next size.
  lo.run_until([&] { return lo.a().engine->idle() && lo.b().engine->idle(); }, 1'000'000'000);
  std::sort(samples.begin(), samples.end());
  auto pct = [&](double p) {
    return samples[static_cast<size_t>(p * static_cast<double>(samples.size() - 1))];
  };
  double sum = 0;
  for (double s : samples) sum += s;
  std::printf(" %-10zu %-12" PRIu64 " %-10.2f %-10.2f %-10.2f %-10.2f %-10.2f\n", n, iters,
              samples.front(), pct(0.5), sum / static_cast<double>(samples.size()), pct(0.99),
              samples.back());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool all = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--op" && i + 1 < argc) {
      o.op = next();
    } else if (a == "--size" && i + 1 < argc) {
      o.sizes = {std::stoul(next())};
    } else if (a == "--all") {
      all = true;
    } else if (a == "--iters" && i + 1 < argc) {
      o.iters = std::stoull(next());
    } else if (a == "--lat") {
      o.lat = true;
    } else if (a == "--bw") {
      o.bw = true;
    } else if (a == "--pmtu" && i + 1 < argc) {
      o.pmtu = static_cast<uint32_t>(std::stoul(next()));
    } else if (a == "--tx-depth" && i + 1 < argc) {
      o.tx_depth = static_cast<uint32_t>(std::stoul(next()));
    } else if (a == "--gbn") {
      o.gbn = true;
    } else if (a == "--server" || a == "--client" || a == "--vdev") {
      std::fprintf(stderr,
                   "%s: cross-process runs are not implemented yet (only the in-process "
                   "net_ring link is); see the README status table\n",
                   a.c_str());
      return 2;
    } else {
      usage(argv[0]);
      return 2;
    }
  }
  if (o.op != "write" && o.op != "read" && o.op != "send") {
    usage(argv[0]);
    return 2;
  }
  if (!o.lat && !o.bw) o.lat = o.bw = true;
  if (o.sizes.empty()) {
    if (all) {
      for (size_t s = 2; s <= (8u << 20); s *= 2) o.sizes.push_back(s);
    } else {
      o.sizes = {2, 64, 1024, 4096, 65536, 1u << 20};
    }
  }

  const auto& eal = dpdk::eal_init();
  if (!eal.ok) {
    std::fprintf(stderr, "dpdat-perf: %s\n", eal.error.c_str());
    return 1;
  }
  tools::Loopback lo;
  rc::QpConfig q;
  q.pmtu = o.pmtu;
  q.selective_repeat = !o.gbn;
  q.sq_depth = std::max<uint32_t>(o.tx_depth * 2, 256);
  q.rq_depth = 512;
  std::string err;
  if (!lo.open(q, &err)) {
    std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
    return 1;
  }
  std::printf("dpdat-perf: RDMA %s, in-process net_ring link, inline progress, PMTU %u, %s\n",
              o.op.c_str(), lo.a().qp->config().pmtu,
              eal.hugepages ? "hugepages" : "no hugepages (--no-huge)");
  if (o.bw) {
    std::printf("\n %-10s %-12s %-16s %-16s %-14s %-12s\n", "#bytes", "#iterations",
                "BW peak[Gb/s]", "BW average[Gb/s]", "BW avg[MB/s]", "MsgRate[Mpps]");
    for (size_t n : o.sizes) {
      const uint64_t it =
          o.iters != 0
              ? o.iters
              : std::clamp<uint64_t>((512ull << 20) / std::max<size_t>(n, 64), 1000, 100000);
      if (!run_bw(lo, o, n, it)) return 1;
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
      if (!run_lat(lo, o, n, o.iters != 0 ? o.iters : 10000)) return 1;
  }
  return 0;
}
