// Congestion control on the simulated bottleneck (virtual time): 2 flows
// sharing one 10 Gb/s link, and 8 flows into one receiver (incast, each flow
// paced at a 10 Gb/s line rate, so they offer 80 Gb/s), each with control
// off / DCQCN / delay / both, on a link that ECN-marks every frame above 16
// KiB queued (ecn:1, step), on one that marks as RED does (ecn:2: from 16 KiB
// with a probability rising to 20 % at 64 KiB, every frame beyond), and on
// one that never marks (ecn:0), in one run.  The link: 10
// Gb/s, 2 us one way, a 512 KiB queue; 64 KiB WRITEs, 4 outstanding per
// flow, 4 KiB PMTU; 10 ms warm-up, then 40 ms measured.  Counters per case: aggregate
// goodput as a fraction of the bottleneck, Jain's fairness index, bottleneck
// drops once settled (after the warm-up) and in all, the 99th-percentile
// queueing delay once settled, CNPs, rate and window cuts.  Each case is one
// deterministic simulation (Iterations(1)); the wall time shown is the cost
// of simulating it, not a speed of dpdat.
#include <benchmark/benchmark.h>

#include "flows.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint64_t kBottleneckBps = 10'000'000'000;

void BM_Bottleneck(benchmark::State& state) {
  const auto flows = static_cast<uint32_t>(state.range(0));
  const auto mode = static_cast<CcMode>(state.range(1));
  const auto ecn = state.range(2);
  FlowsResult r;
  for (auto _ : state) {
    LinkImpairment imp;
    imp.rate_bps = kBottleneckBps;
    imp.delay_ns = 2'000;
    imp.queue_bytes = 512 * 1024;
    imp.ecn_threshold_bytes = ecn != 0 ? 16 * 1024 : 0;
    if (ecn == 2) {
      imp.ecn_max_bytes = 64 * 1024;
      imp.ecn_pmax = 0.2;
    }
    Flows f(7, flows, cc_qp_config(mode, kBottleneckBps), imp);
    r = f.run(/*warmup_ns=*/10'000'000, /*measure_ns=*/40'000'000);
  }
  state.SetLabel(std::string(cc_mode_name(mode)) + (flows == 2 ? " 2-flows" : " incast-8") +
                 (ecn == 2   ? " red"
                  : ecn == 1 ? " marking"
                             : " unmarked"));
  state.counters["goodput_of_link"] = r.aggregate_bps() / static_cast<double>(kBottleneckBps);
  state.counters["jain"] = r.jain();
  state.counters["drops_settled"] = static_cast<double>(r.overflow_drops);
  state.counters["drops_all"] = static_cast<double>(r.overflow_drops_total);
  state.counters["p99_queue_us"] = static_cast<double>(r.p99_queue_ns) / 1e3;
  state.counters["cnp_rx"] = static_cast<double>(r.cnp_rx);
  state.counters["rate_cuts"] = static_cast<double>(r.rate_cuts);
  state.counters["win_cuts"] = static_cast<double>(r.window_cuts);
  state.counters["failed"] = static_cast<double>(r.failed);
}

BENCHMARK(BM_Bottleneck)
    ->ArgsProduct({{2, 8}, {0, 1, 2, 3}, {1, 2, 0}})
    ->ArgNames({"flows", "cc", "ecn"})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dpdat::rc::test

BENCHMARK_MAIN();
