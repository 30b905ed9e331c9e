#pragma once
// N RDMA WRITE flows through the simulated link's bottleneck: N queue pairs
// on a sending engine, each connected to its own queue pair on a receiving
// engine, each keeping `depth` WRITEs of `msg_len` bytes outstanding for the
// whole run.  Each flow's congestion control is its own (per QP), and with
// CcConfig::pace_line_rate each flow leaves at no more than its line rate, as
// from its own host's port: N flows then meet only at the bottleneck (incast
// when their line rates add up to more than it).  Shared by the sim tests
// and bench/cc_bench.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "rc/engine/engine.hpp"
#include "rc/mr_table.hpp"
#include "rc/qp/qp.hpp"
#include "sim/sim_link.hpp"

namespace dpdat::rc::test {

struct FlowsResult {
  uint64_t window_ns = 0;             // measured span (after the warm-up)
  std::vector<uint64_t> bytes;        // goodput per flow in the span (completed WRITEs)
  uint64_t overflow_drops = 0;        // bottleneck drops in the span
  uint64_t overflow_drops_total = 0;  // ... over the whole run
  uint64_t ecn_marked = 0;            // in the span
  uint64_t p99_queue_ns = 0;          // queueing delay, 99th percentile, in the span
  uint64_t cnp_tx = 0, cnp_rx = 0, rate_cuts = 0, window_cuts = 0;
  uint64_t failed = 0;  // completions in error (must stay 0)

  double aggregate_bps() const {
    uint64_t t = 0;
    for (uint64_t b : bytes) t += b;
    return window_ns == 0 ? 0 : static_cast<double>(t) * 8e9 / static_cast<double>(window_ns);
  }
  // Jain's fairness index over the flows' goodput: (sum x)^2 / (n sum x^2).
  double jain() const {
    double s = 0, s2 = 0;
    for (uint64_t b : bytes) {
      s += static_cast<double>(b);
      s2 += static_cast<double>(b) * static_cast<double>(b);
    }
    return s2 == 0 ? 0 : s * s / (static_cast<double>(bytes.size()) * s2);
  }
};

class Flows {
 public:
  static constexpr uint64_t kStepNs = 1'000;
  static constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;

  Flows(uint64_t seed, uint32_t n, const QpConfig& qcfg, const LinkImpairment& a_to_b,
        uint64_t msg_len = 64 * 1024, uint32_t depth = 4)
      : link_(seed, 4096, 4096), msg_len_(msg_len), depth_(depth) {
    EngineConfig ecfg;
    ecfg.pmtu = 4096;
    for (int i = 0; i < 2; ++i) {
      mr_[i] = std::make_unique<MrTable>(4 * n + 16, 64);
      engine_[i] = std::make_unique<Engine>(link_.end(i), *mr_[i], ecfg);
      cq_[i] = std::make_unique<CompletionQueue>(4096);
    }
    link_.set_impairment(0, a_to_b);
    src_.assign(msg_len, 0x5A);
    mr_[0]->mr_register(1, src_.data(), reinterpret_cast<uint64_t>(src_.data()), msg_len, kLocal,
                        &src_lkey_);
    dst_.resize(n);
    flows_.resize(n);
    for (uint32_t k = 0; k < n; ++k) {
      dst_[k].assign(msg_len, 0);
      mr_[1]->mr_register(1, dst_[k].data(), reinterpret_cast<uint64_t>(dst_[k].data()), msg_len,
                          kLocal | priv::kRemoteWrite, &flows_[k].rkey);
      Qp* a = engine_[0]->create_qp(1, qcfg, cq_[0].get(), cq_[0].get());
      Qp* b = engine_[1]->create_qp(1, qcfg, cq_[1].get(), cq_[1].get());
      PathInfo pa, pb;
      pa.local_mac = {2, 0, 0, 0, 0, 1};
      pa.peer_mac = {2, 0, 0, 0, 0, 2};
      pa.local_ip = 0x0A000001;
      pa.peer_ip = 0x0A000002;
      pa.peer_qpn = b->qpn();
      pa.udp_src_port = static_cast<uint16_t>(0xC000 + k);
      pb.local_mac = pa.peer_mac;
      pb.peer_mac = pa.local_mac;
      pb.local_ip = pa.peer_ip;
      pb.peer_ip = pa.local_ip;
      pb.peer_qpn = a->qpn();
      pb.udp_src_port = static_cast<uint16_t>(0xD000 + k);
      a->connect(pa, wire::Psn(0x100 * k), wire::Psn(0x800000 + 0x100 * k));
      b->connect(pb, wire::Psn(0x800000 + 0x100 * k), wire::Psn(0x100 * k));
      flows_[k].qp = a;
      flows_[k].peer = b;
      flows_[k].va = reinterpret_cast<uint64_t>(dst_[k].data());
    }
  }

  Qp& sender(uint32_t k) { return *flows_[k].qp; }
  Qp& receiver(uint32_t k) { return *flows_[k].peer; }
  SimLink& link() { return link_; }
  uint64_t now() const { return now_; }
  size_t size() const { return flows_.size(); }

  // Flow k starts posting at `start_ns` after the run begins (default: at once).
  void set_start(uint32_t k, uint64_t start_ns) { flows_[k].start_ns = start_ns; }

  // Runs for `warmup_ns + measure_ns` of virtual time; measures in the second part.
  FlowsResult run(uint64_t warmup_ns, uint64_t measure_ns) {
    const uint64_t t0 = now_;
    const uint64_t m0 = t0 + warmup_ns, end = m0 + measure_ns;
    FlowsResult r;
    r.bytes.assign(flows_.size(), 0);
    LinkStats at_m0{};
    bool measuring = false;
    while (now_ < end) {
      if (!measuring && now_ >= m0) {
        measuring = true;
        at_m0 = link_.stats(0);
      }
      for (auto& f : flows_) {
        while (now_ >= t0 + f.start_ns && f.outstanding < depth_) {
          SendWr w;
          w.op = WrOp::kWrite;
          w.cookie = static_cast<uint64_t>(&f - flows_.data());
          w.num_sge = 1;
          w.sge[0] = Sge{src_lkey_, reinterpret_cast<uint64_t>(src_.data()), msg_len_};
          w.remote_va = f.va;
          w.rkey = f.rkey;
          if (f.qp->post_send(w) != Qp::PostResult::kOk) break;
          ++f.outstanding;
        }
      }
      link_.set_now(now_);
      engine_[0]->poll(now_);
      engine_[1]->poll(now_);
      Completion c;
      while (cq_[0]->pop(&c)) {
        if (c.cookie >= flows_.size()) continue;
        Flow& f = flows_[c.cookie];
        --f.outstanding;
        if (c.status != WcStatus::kSuccess)
          ++r.failed;
        else if (measuring)
          r.bytes[c.cookie] += msg_len_;
      }
      while (cq_[1]->pop(&c)) {
      }
      now_ += kStepNs;
    }
    r.window_ns = measure_ns;
    const LinkStats& s = link_.stats(0);
    r.overflow_drops_total = s.overflow_drops;
    r.overflow_drops = s.overflow_drops - at_m0.overflow_drops;
    r.ecn_marked = s.ecn_marked - at_m0.ecn_marked;
    LinkStats span{};
    for (size_t i = 0; i < LinkStats::kDelayBuckets; ++i)
      span.queue_delay_hist[i] = s.queue_delay_hist[i] - at_m0.queue_delay_hist[i];
    r.p99_queue_ns = span.queue_delay_quantile(0.99);
    for (auto& f : flows_) {
      r.cnp_tx += f.peer->counters().cnp_tx;
      r.cnp_rx += f.qp->counters().cnp_rx;
      r.rate_cuts += f.qp->counters().cc_rate_cuts;
      r.window_cuts += f.qp->counters().cc_window_cuts;
    }
    return r;
  }

 private:
  struct Flow {
    Qp* qp = nullptr;
    Qp* peer = nullptr;
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t outstanding = 0;
    uint64_t start_ns = 0;
  };
  SimLink link_;
  std::unique_ptr<MrTable> mr_[2];
  std::unique_ptr<Engine> engine_[2];
  std::unique_ptr<CompletionQueue> cq_[2];
  std::vector<uint8_t> src_;
  uint32_t src_lkey_ = 0;
  std::vector<std::vector<uint8_t>> dst_;
  std::vector<Flow> flows_;
  uint64_t msg_len_;
  uint32_t depth_;
  uint64_t now_ = 1'000'000;
};

// The QP settings the congestion tests and benchmarks use: 4 KiB PMTU, the
// given control, line rate `line_bps` paced as a port would.
inline QpConfig cc_qp_config(CcMode mode, uint64_t line_bps) {
  QpConfig q;
  q.pmtu = 4096;
  q.sq_depth = 64;
  q.cc.mode = mode;
  q.cc.line_rate_bps = line_bps;
  q.cc.pace_line_rate = true;
  return q;
}

}  // namespace dpdat::rc::test
