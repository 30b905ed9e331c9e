// RC protocol engine on the simulated link, one thread, both engines driven
// alternately: what the protocol costs (segmentation, ICRC, parsing, ACKs,
// placement) without any NIC.  Counters:
//   bytes_per_second  payload goodput in wall-clock time
//   wire_efficiency   payload bytes delivered / payload bytes transmitted
//   timeouts          retransmission timeouts per iteration
// Loss runs use the link's seeded loss in both directions; a virtual-clock
// timeout costs no wall time, so wire_efficiency is the honest loss figure.
#include <benchmark/benchmark.h>

#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;

void run_writes(benchmark::State& state, size_t msg, uint32_t pmtu, double loss, bool sr) {
  QpConfig c;
  c.pmtu = pmtu;
  c.selective_repeat = sr;
  c.sq_depth = 512;
  c.window = 128;
  c.retry_count = 30;
  Pair p(42, c, 8192);
  LinkImpairment imp;
  imp.loss = loss;
  p.link().set_impairment(0, imp);
  p.link().set_impairment(1, imp);
  const size_t batch =
      std::max<size_t>(1, std::min<size_t>(256, (4u << 20) / std::max<size_t>(msg, 1)));
  Buffer src = p.reg(0, msg, kLocal);
  fill_pattern(src.bytes, 1);
  Buffer dst = p.reg(1, msg, kLocal | priv::kRemoteWrite);
  uint64_t delivered = 0, timeouts0 = p.a().qp->counters().timeouts;
  const uint64_t tx0 = p.a().qp->counters().tx_packets;
  for (auto _ : state) {
    for (size_t i = 0; i < batch; ++i) {
      SendWr wr = rdma_wr(WrOp::kWrite, src, dst, msg, i);
      wr.flags = i + 1 == batch ? wr_flag::kSignaled : 0u;
      if (p.a().qp->post_send(wr) != Qp::PostResult::kOk) state.SkipWithError("post failed");
    }
    if (!p.run_until([&] { return p.a().scq->size() == 1; })) {
      state.SkipWithError("transfer did not complete");
      break;
    }
    Completion done;
    p.a().scq->pop(&done);
    if (done.status != WcStatus::kSuccess) {
      state.SkipWithError("write failed");
      break;
    }
    delivered += batch * msg;
  }
  const uint64_t pkts = p.a().qp->counters().tx_packets - tx0;
  const uint64_t per_msg = (msg + pmtu - 1) / pmtu;
  const double ideal =
      static_cast<double>(static_cast<uint64_t>(state.iterations()) * batch * per_msg);
  state.SetBytesProcessed(static_cast<int64_t>(delivered));
  state.SetItemsProcessed(static_cast<int64_t>(static_cast<uint64_t>(state.iterations()) * batch));
  state.counters["wire_efficiency"] = pkts == 0 ? 0.0 : ideal / static_cast<double>(pkts);
  state.counters["timeouts"] =
      benchmark::Counter(static_cast<double>(p.a().qp->counters().timeouts - timeouts0),
                         benchmark::Counter::kAvgIterations);
}

void BM_Write(benchmark::State& s) {
  run_writes(s, static_cast<size_t>(s.range(0)), static_cast<uint32_t>(s.range(1)), 0.0, true);
}
BENCHMARK(BM_Write)
    ->ArgNames({"msg", "pmtu"})
    ->Args({8, 1024})
    ->Args({4096, 1024})
    ->Args({65536, 1024})
    ->Args({4096, 4096})
    ->Args({65536, 4096})
    ->Unit(benchmark::kMicrosecond);

// Goodput under loss, go-back-N vs selective repeat: 64 KiB WRITEs, PMTU 1024.
void BM_WriteLoss(benchmark::State& s) {
  run_writes(s, 65536, 1024, static_cast<double>(s.range(0)) / 1000.0, s.range(1) != 0);
}
BENCHMARK(BM_WriteLoss)
    ->ArgNames({"loss_permille", "sr"})
    ->Args({0, 0})
    ->Args({10, 0})
    ->Args({50, 0})
    ->Args({0, 1})
    ->Args({10, 1})
    ->Args({50, 1})
    ->Unit(benchmark::kMillisecond);

// Goodput under random loss in each direction, in virtual time, relative to
// the lossless run: 64 KiB RDMA WRITE, READ and SEND over a 25 Gb/s link
// with 2 us one-way delay, PMTU 1024, selective repeat or go-back-N.  The
// simulated clock makes the figure independent of host load; rto_min_ns is
// the default 50 us.  Counters (per 64 KiB message): timeouts, go-back-N
// rewinds (retransmits), selective resends and re-requests (sr_resends),
// sequence NAKs the requester took (seq_naks) and the responder's repeats of
// them (nak_repeats), and vgoodput_gbps, the payload rate in virtual time.
void BM_Loss(benchmark::State& state) {
  static constexpr const char* kOps[] = {"write", "read", "send"};
  const auto op = static_cast<size_t>(state.range(0));
  const double loss = static_cast<double>(state.range(1)) / 1000.0;
  const bool sr = state.range(2) != 0;
  constexpr size_t kMsg = 65536;
  constexpr size_t kBatch = 64;  // 4 MiB per iteration
  QpConfig c;
  c.pmtu = 1024;
  c.selective_repeat = sr;
  c.sq_depth = 512;
  c.rq_depth = 512;
  c.retry_count = 30;
  Pair p(42, c, 8192);
  LinkImpairment imp;
  imp.loss = loss;
  imp.delay_ns = 2'000;
  imp.rate_bps = 25'000'000'000ull;
  p.link().set_impairment(0, imp);
  p.link().set_impairment(1, imp);
  Buffer a = p.reg(0, kMsg, kLocal);
  Buffer b = p.reg(1, kMsg * kBatch, kLocal | priv::kRemoteWrite | priv::kRemoteRead);
  fill_pattern(a.bytes, 1);
  fill_pattern(b.bytes, 2);
  const QpCounters c0 = p.a().qp->counters();
  const QpCounters b0 = p.b().qp->counters();
  uint64_t vtime = 0, msgs = 0;
  for (auto _ : state) {
    const uint64_t t0 = p.now();
    for (size_t i = 0; i < kBatch; ++i) {
      SendWr wr;
      wr.cookie = i;
      wr.flags = i + 1 == kBatch ? wr_flag::kSignaled : 0u;
      wr.num_sge = 1;
      wr.sge[0] = Sge{a.lmr, a.va(), kMsg};
      wr.remote_va = b.va() + i * kMsg;
      wr.rkey = b.lmr;
      wr.op = op == 0 ? WrOp::kWrite : op == 1 ? WrOp::kRead : WrOp::kSend;
      if (op == 2) {
        RecvWr r;
        r.cookie = i;
        r.num_sge = 1;
        r.sge[0] = Sge{b.lmr, b.va() + i * kMsg, kMsg};
        if (p.b().qp->post_recv(r) != Qp::PostResult::kOk) state.SkipWithError("post_recv failed");
      }
      if (p.a().qp->post_send(wr) != Qp::PostResult::kOk) state.SkipWithError("post failed");
    }
    if (!p.run_until([&] { return p.a().scq->size() == 1; })) {
      state.SkipWithError("transfer did not complete");
      break;
    }
    Completion done;
    p.a().scq->pop(&done);
    (void)drain(*p.b().rcq);
    if (done.status != WcStatus::kSuccess) {
      state.SkipWithError("transfer failed");
      break;
    }
    vtime += p.now() - t0;
    msgs += kBatch;
  }
  const QpCounters& c1 = p.a().qp->counters();
  const auto per_msg = [&](uint64_t v) {
    return benchmark::Counter(msgs == 0 ? 0.0 : static_cast<double>(v) / static_cast<double>(msgs));
  };
  state.SetLabel(std::string(kOps[op]) + (sr ? " sr" : " gbn"));
  state.counters["vgoodput_gbps"] =
      vtime == 0 ? 0.0 : static_cast<double>(msgs * kMsg * 8) / static_cast<double>(vtime);
  state.counters["timeouts"] = per_msg(c1.timeouts - c0.timeouts);
  state.counters["retransmits"] = per_msg(c1.retransmits - c0.retransmits);
  state.counters["sr_resends"] = per_msg(c1.sr_resends - c0.sr_resends);
  state.counters["tlp"] = per_msg(c1.tlp_probes - c0.tlp_probes);
  state.counters["seq_naks"] = per_msg(c1.seq_naks_rx - c0.seq_naks_rx);
  state.counters["nak_repeats"] =
      per_msg(p.b().qp->counters().seq_nak_repeats - b0.seq_nak_repeats);
  state.counters["dup_rx"] = per_msg(p.b().qp->counters().duplicates_rx - b0.duplicates_rx +
                                     c1.duplicates_rx - c0.duplicates_rx);
  state.counters["tx_pkts"] = per_msg(c1.tx_packets - c0.tx_packets);
  state.counters["cc_wcuts"] = per_msg(c1.cc_window_cuts - c0.cc_window_cuts);
}
void loss_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"op", "loss_permille", "sr"});
  for (int64_t op : {0, 1, 2})
    for (int64_t sr : {1, 0})
      for (int64_t l : {0, 1, 10, 50}) b->Args({op, l, sr});
}
BENCHMARK(BM_Loss)->Apply(loss_args)->Iterations(16)->Unit(benchmark::kMillisecond);

void BM_Memcpy64K(benchmark::State& s) {
  std::vector<uint8_t> a(65536, 1), b(65536);
  for (auto _ : s) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  s.SetBytesProcessed(static_cast<int64_t>(s.iterations() * 65536));
}
BENCHMARK(BM_Memcpy64K);

void BM_Memcpy64MiB(benchmark::State& s) {
  std::vector<uint8_t> a(64u << 20, 1), b(64u << 20);
  for (auto _ : s) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  s.SetBytesProcessed(static_cast<int64_t>(s.iterations() * (64u << 20)));
}
BENCHMARK(BM_Memcpy64MiB)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dpdat::rc::test

BENCHMARK_MAIN();
