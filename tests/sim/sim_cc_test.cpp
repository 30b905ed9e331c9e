// Congestion control on the simulated link: CNPs on CE (RoCEv2 format, at
// most one per QP per interval), DCQCN's rate cut and recovery, the pacer
// holding a configured rate without busy polling, fairness of two flows and
// an 8-to-1 incast on the bottleneck model, and the delay control on a path
// that does not mark.  All in virtual time.
#include <gtest/gtest.h>

#include <cstring>

#include "flows.hpp"
#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;
constexpr uint64_t kBottleneckBps = 10'000'000'000;

LinkImpairment bottleneck(uint64_t ecn_threshold_bytes = 16 * 1024) {
  LinkImpairment imp;
  imp.rate_bps = kBottleneckBps;
  imp.delay_ns = 2'000;
  imp.queue_bytes = 512 * 1024;
  imp.ecn_threshold_bytes = ecn_threshold_bytes;
  return imp;
}

// ------------------------------------------------------------ notification point

struct CnpRun {
  QpCounters a, b;
  uint64_t ns = 0;
  std::vector<std::vector<uint8_t>> cnps;  // frames B sent with opcode 0x81
  uint32_t a_qpn = 0;
};

// One 2 MiB WRITE from A into a 1 Gb/s bottleneck marking above 8 KiB.
CnpRun write_into_marking_link(CcMode mode, uint64_t cnp_interval_ns) {
  QpConfig q;
  q.pmtu = 1024;
  q.cc.mode = mode;
  q.cc.cnp_interval_ns = cnp_interval_ns;
  q.cc.line_rate_bps = 1'000'000'000;
  Pair p(5, q);
  LinkImpairment imp;
  imp.rate_bps = 1'000'000'000;
  imp.ecn_threshold_bytes = 8 * 1024;
  p.link().set_impairment(0, imp);
  p.link().set_capture(true);
  constexpr uint64_t kLen = 2 << 20;
  Buffer src = p.reg(0, kLen, kLocal, 7);
  Buffer dst = p.reg(1, kLen, kLocal | priv::kRemoteWrite);
  const uint64_t t0 = p.now();
  EXPECT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, kLen)), Qp::PostResult::kOk);
  EXPECT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  const auto cs = drain(*p.a().scq);
  EXPECT_EQ(cs.size(), 1u);
  if (!cs.empty()) {
    EXPECT_EQ(cs[0].status, WcStatus::kSuccess);
  }
  EXPECT_EQ(src.bytes, dst.bytes);
  CnpRun r;
  r.ns = p.now() - t0;
  r.a = p.a().qp->counters();
  r.b = p.b().qp->counters();
  r.a_qpn = p.a().qp->qpn();
  for (const auto& c : p.link().captured())
    if (c.from_end == 1 && c.bytes.size() > 42 && c.bytes[42] == 0x81) r.cnps.push_back(c.bytes);
  return r;
}

TEST(SimCc, CeIsAnsweredWithRoceV2Cnps) {
  const CnpRun r = write_into_marking_link(CcMode::kDcqcn, 50'000);
  EXPECT_GT(r.b.ce_rx, 0u);
  EXPECT_GT(r.b.cnp_tx, 0u);
  ASSERT_EQ(r.cnps.size(), r.b.cnp_tx);
  for (const auto& f : r.cnps) {
    wire::PacketView v;
    ASSERT_EQ(wire::parse_packet(f, wire::ParseOptions{.pmtu = 1024}, v), wire::Reject::kNone);
    EXPECT_EQ(v.opcode, wire::Opcode::kCnp);
    EXPECT_EQ(v.bth->dest_qp(), r.a_qpn);  // the QP that is to slow down
    EXPECT_EQ(v.bth->psn().value(), 0u);
    EXPECT_FALSE(v.bth->ack_req());
    EXPECT_EQ(f.size(), 14u + 20 + 8 + 12 + 16 + 4);
    for (size_t i = 54; i < 70; ++i) EXPECT_EQ(f[i], 0);
    EXPECT_EQ(v.ip->tos & 3u, 0u);  // a CNP is not ECN-capable itself
  }
  // The sender got each and cut its rate on each.
  EXPECT_EQ(r.a.cnp_rx, r.b.cnp_tx);
  EXPECT_EQ(r.a.cc_rate_cuts, r.a.cnp_rx);
}

TEST(SimCc, CnpsAreRateLimitedPerInterval) {
  for (const uint64_t interval : {50'000ull, 400'000ull}) {
    SCOPED_TRACE(interval);
    const CnpRun r = write_into_marking_link(CcMode::kDcqcn, interval);
    EXPECT_GT(r.b.cnp_tx, 0u);
    EXPECT_GT(r.b.ce_rx, 2 * r.b.cnp_tx);  // most CE packets got no CNP of their own
    EXPECT_LE(r.b.cnp_tx, r.ns / interval + 1);
  }
}

TEST(SimCc, NoCnpWithoutDcqcn) {
  for (const CcMode m : {CcMode::kOff, CcMode::kDelay}) {
    const CnpRun r = write_into_marking_link(m, 50'000);
    EXPECT_GT(r.b.ce_rx, 0u) << cc_mode_name(m);
    EXPECT_EQ(r.b.cnp_tx, 0u) << cc_mode_name(m);
    EXPECT_TRUE(r.cnps.empty());
  }
}

TEST(SimCc, ReadResponsesAreControlledAtTheResponder) {
  // READ data flows responder -> requester: CE on the responses makes the
  // requester send CNPs to the responder's QP, whose rate is then cut.
  QpConfig q;
  q.pmtu = 1024;
  q.cc.mode = CcMode::kDcqcn;
  q.cc.line_rate_bps = 2'000'000'000;
  q.cc.pace_line_rate = true;
  Pair p(6, q);
  LinkImpairment imp;
  imp.rate_bps = 1'000'000'000;
  imp.ecn_threshold_bytes = 8 * 1024;
  p.link().set_impairment(1, imp);  // B -> A
  constexpr uint64_t kLen = 2 << 20;
  Buffer dst = p.reg(0, kLen, kLocal);
  Buffer src = p.reg(1, kLen, kLocal | priv::kRemoteRead, 9);
  EXPECT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kRead, dst, src, kLen)), Qp::PostResult::kOk);
  EXPECT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  const auto cs = drain(*p.a().scq);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].status, WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, dst.bytes);
  const QpCounters& a = p.a().qp->counters();
  const QpCounters& b = p.b().qp->counters();
  EXPECT_GT(a.ce_rx, 0u);
  EXPECT_GT(a.cnp_tx, 0u);
  EXPECT_EQ(b.cnp_rx, a.cnp_tx);
  EXPECT_EQ(b.cc_rate_cuts, b.cnp_rx);
  // The responder's READ responses were held by its pacer, at a rate cut
  // below the line rate.
  EXPECT_GT(b.cc_paced, 0u);
  EXPECT_TRUE(p.b().qp->cc().rp().limited());
  EXPECT_LT(p.b().qp->cc().pace_rate_bps(), 2'000'000'000u);
}

// ------------------------------------------------------------ reaction point

TEST(SimCc, DcqcnCutsAndRecoversAsThePaperSays) {
  CcConfig c;
  c.line_rate_bps = 10'000'000'000;
  DcqcnRate rp(c);
  EXPECT_FALSE(rp.limited());
  const uint64_t t = 1'000'000;
  rp.on_cnp(t);  // alpha starts at 1: Rc halves
  EXPECT_TRUE(rp.limited());
  EXPECT_DOUBLE_EQ(rp.rate_bps(), 5e9);
  EXPECT_DOUBLE_EQ(rp.target_bps(), 10e9);
  EXPECT_DOUBLE_EQ(rp.alpha(), 1.0);  // (1 - g) 1 + g
  rp.on_cnp(t + 1'000);
  EXPECT_DOUBLE_EQ(rp.rate_bps(), 2.5e9);
  EXPECT_DOUBLE_EQ(rp.target_bps(), 5e9);
  // Fast recovery: the first F - 1 timer periods (stage counts below F),
  // each halfway back to Rt, Rt unchanged.
  rp.advance(t + 1'000 + 4 * c.rate_timer_ns);
  EXPECT_NEAR(rp.rate_bps(), 5e9 - 2.5e9 / 16, 1);
  EXPECT_DOUBLE_EQ(rp.target_bps(), 5e9);
  // Alpha decays by (1 - g) per K without CNPs.
  EXPECT_LT(rp.alpha(), 1.0);
  // Then additive increase: Rt grows by R_AI per period.
  rp.advance(t + 1'000 + 5 * c.rate_timer_ns);
  EXPECT_DOUBLE_EQ(rp.target_bps(), 5e9 + static_cast<double>(c.rate_ai_bps));
  // Byte counter events past F as well: hyper increase on the next period.
  for (uint32_t i = 0; i < c.fast_recovery + 1; ++i)
    rp.on_sent(c.byte_counter, t + 1'000 + 5 * c.rate_timer_ns);
  const double before = rp.target_bps();
  rp.advance(t + 1'000 + 6 * c.rate_timer_ns);
  EXPECT_DOUBLE_EQ(rp.target_bps() - before, static_cast<double>(c.rate_hai_bps));
  // Long enough without a CNP: back at the line rate, the limiter off.
  rp.advance(t + 100'000'000);
  EXPECT_FALSE(rp.limited());
  EXPECT_DOUBLE_EQ(rp.rate_bps(), 10e9);
}

TEST(SimCc, SenderCutsOnCnpsThenRecoversOnceTheQueueIsGone) {
  Flows f(3, 1, cc_qp_config(CcMode::kDcqcn, 20'000'000'000), bottleneck());
  f.run(0, 5'000'000);
  const Qp& q = f.sender(0);
  EXPECT_GT(q.counters().cnp_rx, 0u);
  EXPECT_EQ(q.counters().cc_rate_cuts, q.counters().cnp_rx);
  EXPECT_TRUE(q.cc().rp().limited());
  EXPECT_LT(q.cc().pace_rate_bps(), 12'000'000'000u);  // near the 10 Gb/s bottleneck, not 20
  LinkImpairment open;
  open.delay_ns = 2'000;
  f.link().set_impairment(0, open);
  const uint64_t cuts = q.counters().cc_rate_cuts;
  f.run(0, 30'000'000);
  EXPECT_EQ(q.counters().cc_rate_cuts, cuts);          // no more marks, no more cuts
  EXPECT_FALSE(q.cc().rp().limited());                 // recovered to the line rate
  EXPECT_EQ(q.cc().pace_rate_bps(), 20'000'000'000u);  // paced at the line rate only
}

// ------------------------------------------------------------ pacing

TEST(SimCc, PacingHoldsTheRateWithoutBusyPolling) {
  for (const uint64_t rate : {500'000'000ull, 2'000'000'000ull}) {
    SCOPED_TRACE(rate);
    LinkImpairment open;
    open.delay_ns = 2'000;
    Flows f(9, 1, cc_qp_config(CcMode::kBoth, rate), open);
    const FlowsResult r = f.run(1'000'000, 20'000'000);
    EXPECT_EQ(r.failed, 0u);
    // Goodput: the rate less the headers (4 KiB payload per ~4.17 KB frame),
    // within the granularity of 64 KiB messages over the span.
    EXPECT_LE(r.aggregate_bps(), static_cast<double>(rate));
    EXPECT_GE(r.aggregate_bps(), 0.9 * static_cast<double>(rate));
    const QpCounters& c = f.sender(0).counters();
    EXPECT_GT(c.cc_paced, 0u);
    // A held QP waits on its pace timer: a few holds per packet (the timer,
    // an ACK that wakes the QP early), where busy polling would hold once
    // per poll (21,000 polls, against some 300 / 1,300 packets).
    EXPECT_LE(c.cc_paced, 3 * c.tx_packets);
    EXPECT_EQ(c.timeouts, 0u);  // a QP waiting for its pacer is not timing out
    EXPECT_EQ(c.tlp_probes, 0u);
  }
}

// ------------------------------------------------------------ sharing

void expect_settled(const FlowsResult& r, const char* what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(r.failed, 0u);
  EXPECT_GE(r.aggregate_bps(), 0.9 * static_cast<double>(kBottleneckBps));
  EXPECT_GE(r.jain(), 0.9);
  EXPECT_EQ(r.overflow_drops, 0u);  // once settled
}

TEST(SimCc, TwoFlowsShareTheBottleneckFairly) {
  for (const CcMode m : {CcMode::kDcqcn, CcMode::kDelay, CcMode::kBoth}) {
    Flows f(11, 2, cc_qp_config(m, kBottleneckBps), bottleneck());
    f.set_start(1, 3'000'000);  // the second flow joins a busy link
    const FlowsResult r = f.run(15'000'000, 30'000'000);
    expect_settled(r, cc_mode_name(m).data());
  }
}

TEST(SimCc, IncastOfEightSettlesWithoutDrops) {
  FlowsResult off;
  {
    Flows f(13, 8, cc_qp_config(CcMode::kOff, kBottleneckBps), bottleneck());
    off = f.run(10'000'000, 20'000'000);
    EXPECT_GT(off.overflow_drops, 0u);  // without control the queue keeps overflowing
  }
  for (const CcMode m : {CcMode::kDcqcn, CcMode::kDelay, CcMode::kBoth}) {
    Flows f(13, 8, cc_qp_config(m, kBottleneckBps), bottleneck());
    const FlowsResult r = f.run(10'000'000, 20'000'000);
    expect_settled(r, cc_mode_name(m).data());
    EXPECT_LT(r.p99_queue_ns, off.p99_queue_ns / 2) << cc_mode_name(m);
  }
}

TEST(SimCc, IncastSettlesOnRedMarking) {
  // Switches set up for DCQCN mark as RED does: from Kmin with a probability
  // rising to Pmax at Kmax, every frame beyond.
  LinkImpairment red = bottleneck();
  red.ecn_max_bytes = 64 * 1024;
  red.ecn_pmax = 0.2;
  for (const CcMode m : {CcMode::kDcqcn, CcMode::kBoth}) {
    Flows f(19, 8, cc_qp_config(m, kBottleneckBps), red);
    const FlowsResult r = f.run(10'000'000, 20'000'000);
    expect_settled(r, cc_mode_name(m).data());
    EXPECT_GT(r.ecn_marked, 0u) << cc_mode_name(m);
    EXPECT_GT(r.rate_cuts, 0u) << cc_mode_name(m);
  }
}

TEST(SimCc, DelayControlKeepsAnUnmarkedQueueShortAndFair) {
  // No ECN marking on the path: DCQCN never hears of the queue; the delay
  // window (on by default with it) holds it near its target delay.
  FlowsResult off;
  {
    Flows f(17, 2, cc_qp_config(CcMode::kOff, kBottleneckBps), bottleneck(0));
    off = f.run(10'000'000, 20'000'000);
  }
  Flows f(17, 2, cc_qp_config(CcMode::kBoth, kBottleneckBps), bottleneck(0));
  const FlowsResult r = f.run(10'000'000, 20'000'000);
  expect_settled(r, "both, unmarked");
  EXPECT_EQ(r.cnp_rx, 0u);
  EXPECT_GT(r.window_cuts, 0u);
  const CcConfig defaults;
  EXPECT_LE(r.p99_queue_ns, defaults.target_delay_ns + defaults.fs_range_ns);
  EXPECT_LT(r.p99_queue_ns, off.p99_queue_ns / 2);
}

TEST(SimCc, ModeNames) {
  for (const CcMode m : {CcMode::kOff, CcMode::kDcqcn, CcMode::kDelay, CcMode::kBoth})
    EXPECT_EQ(parse_cc_mode(cc_mode_name(m)), m);
  EXPECT_FALSE(parse_cc_mode("DCQCN").has_value());
  EXPECT_FALSE(parse_cc_mode("").has_value());
}

}  // namespace
}  // namespace dpdat::rc::test

namespace dpdat::rc::test {
namespace {

// The pacer and DCQCN's byte counter account data only: requests and READ
// responses, never an ACK, a CNP or a SACK (whose bitmap is a payload).
TEST(CcData, AcknowledgementsAreNotData) {
  using wire::Opcode;
  for (const Opcode op :
       {Opcode::kSendFirst, Opcode::kSendOnly, Opcode::kWriteOnly, Opcode::kReadRequest,
        Opcode::kFetchAdd, Opcode::kReadRespMiddle, Opcode::kReadRespOnly})
    EXPECT_TRUE(Qp::cc_counts_as_data(op)) << wire::op_info(op).name;
  for (const Opcode op : {Opcode::kAck, Opcode::kAtomicAck, Opcode::kCnp, Opcode::kSack})
    EXPECT_FALSE(Qp::cc_counts_as_data(op)) << wire::op_info(op).name;
}

}  // namespace
}  // namespace dpdat::rc::test
