// Liveness of the delay control: a window that collapsed below one packet
// paces, it never stalls.  The pacer never holds a packet for longer than one
// frame at the current rate (a sub-packet window: max_pace_gap_ns), whatever
// went out unpaced before; the window recovers on a timer when no round trip
// is measured (a dead peer sends no ACKs); a retransmission timeout's resend
// is not held; a QP whose window collapsed still sends its next request and
// breaks within the retry budget when the peer is gone; and a loaded host,
// whose scheduling stretches some round trips by milliseconds, does not
// drive the control into collapse.  All in virtual time.
#include <gtest/gtest.h>

#include <algorithm>

#include "flows.hpp"
#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;
constexpr uint32_t kFrame = 4096 + 78;  // a 4 KiB data frame with its headers

// Round trips of 400 us against a 50 us target: the window falls to its floor.
constexpr uint64_t kRtt = 400'000;
void collapse(CongestionControl& cc, uint64_t* now) {
  cc.on_sent(kFrame, *now);
  for (int i = 0; i < 40; ++i) {
    *now += kRtt;
    cc.on_rtt(kRtt, *now);
  }
}

CcConfig both() {
  CcConfig c;
  c.mode = CcMode::kBoth;
  return c;
}

TEST(SimCcLiveness, CollapsedWindowRecoversOnATimerWithoutAcks) {
  const CcConfig c = both();
  CongestionControl cc(c, 128);
  uint64_t now = 1'000'000;
  collapse(cc, &now);
  ASSERT_LT(cc.window_pkts(), 0.05);
  ASSERT_GT(cc.pace_rate_bps(), 0u);  // paced: one frame per round trip / window
  // No ACK ever comes again.  The window doubles every timer period (two
  // expected sample gaps: pacing gap and round trip, at least the timer):
  // from 0.01 it is back to a packet after 7, and nothing is paced any more.
  const uint64_t period = std::max(c.window_timer_ns, 2 * (c.max_pace_gap_ns + kRtt));
  uint64_t t = now;
  for (; t < now + 20 * period && cc.window_pkts() < 1; t += 10'000) cc.send_time(t);
  EXPECT_GE(cc.window_pkts(), 1.0);
  EXPECT_LE(t - now, 7 * period + 10'000);
  EXPECT_EQ(cc.pace_rate_bps(), 0u);
  EXPECT_EQ(cc.send_time(t), t);
  EXPECT_GT(cc.delay_window().timer_increases(), 0u);
  // And it keeps growing by ai per period while nothing is measured.
  const double w = cc.window_pkts();
  cc.send_time(t + 4 * period);
  EXPECT_GE(cc.window_pkts(), w + 3);
}

TEST(SimCcLiveness, PacingHoldIsBoundedWhateverWentOutUnpaced) {
  const CcConfig c = both();
  CongestionControl cc(c, 128);
  uint64_t now = 1'000'000;
  collapse(cc, &now);
  // Fifty frames go out without asking the pacer (probes, hole resends):
  // the next packet still waits no more than one pacing gap.
  for (int i = 0; i < 50; ++i) cc.on_sent(kFrame, now);
  EXPECT_GT(cc.send_time(now), now);
  EXPECT_LE(cc.send_time(now), now + c.max_pace_gap_ns);
  // So does a small request after a large frame: one largest frame per gap.
  cc.on_sent(70, now);
  EXPECT_LE(cc.send_time(now), now + c.max_pace_gap_ns);
}

TEST(SimCcLiveness, RetransmissionTimeoutReleasesThePacer) {
  const CcConfig c = both();
  CongestionControl cc(c, 128);
  uint64_t now = 1'000'000;
  collapse(cc, &now);
  for (int i = 0; i < 8; ++i) cc.on_sent(kFrame, now);  // past the burst allowance
  ASSERT_GT(cc.send_time(now + 1), now + 1);
  cc.on_timeout(now + 1);
  EXPECT_EQ(cc.send_time(now + 1), now + 1);  // the resend leaves at once
}

// A path whose round trip (400 us) is far above the delay target (50 to
// 150 us): with eight 64 KiB WRITEs outstanding, A's delay window falls far
// below one packet and stays there, pacing one 4 KiB frame per gap.  The
// WRITEs complete; at that moment B is gone for good, and A posts an RDMA
// READ.  The READ leaves within one pacing gap (at most max_pace_gap_ns), and
// A breaks the QP within the retry budget counted from the post, give or take
// that gap: one timeout and 4 retries, 2 + 4 + 8 + 16 + 32 ms at most (the
// first timeout adapts to the round trip; the rest back off from it, and the
// QP is declared dead no earlier than 60 ms after the first).
TEST(SimCcLiveness, CollapsedWindowStillSendsAndDetectsADeadPeer) {
  QpConfig q;
  q.pmtu = 4096;
  q.cc.mode = CcMode::kBoth;
  q.retry_count = 4;
  q.retransmit_timeout_ns = 2'000'000;
  Pair p(41, q);
  LinkImpairment far;
  far.delay_ns = 200'000;
  p.link().set_impairment(0, far);
  p.link().set_impairment(1, far);
  constexpr size_t kLen = 64 * 1024;
  constexpr uint64_t kWrites = 8;  // outstanding
  Buffer src = p.reg(0, kLen, kLocal | priv::kRemoteRead, 3);
  Buffer dst = p.reg(1, kLen, kLocal | priv::kRemoteWrite | priv::kRemoteRead);
  // Eight WRITEs outstanding until the window is below a tenth of a packet,
  // then the rest complete.
  uint64_t posted = 0, completed = 0;
  bool collapsed = false;
  const auto top_up = [&] {
    completed += p.a().scq->size();
    for (const auto& c : drain(*p.a().scq)) EXPECT_EQ(c.status, WcStatus::kSuccess);
    collapsed = collapsed || p.a().qp->cc().window_pkts() < 0.1;
    while (posted - completed < kWrites && !collapsed) {
      ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, kLen, posted)),
                Qp::PostResult::kOk);
      ++posted;
    }
  };
  ASSERT_TRUE(p.run_until(
      [&] {
        top_up();
        return posted == completed;
      },
      2'000'000'000));
  EXPECT_TRUE(collapsed);
  ASSERT_LT(p.a().qp->cc().window_pkts(), 1.0);
  ASSERT_GT(p.a().qp->cc().pace_rate_bps(), 0u);

  // The peer vanishes: nothing it sends arrives any more.
  p.link().set_filter([](int from_end, const uint8_t*, uint32_t) { return from_end == 0; });
  const uint64_t tx0 = p.a().qp->counters().tx_packets;
  ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kRead, src, dst, 5000, 99)), Qp::PostResult::kOk);
  const uint64_t t0 = p.now();
  ASSERT_TRUE(p.run_until([&] { return p.a().qp->counters().tx_packets > tx0; }, 100'000'000));
  EXPECT_LE(p.now() - t0, q.cc.max_pace_gap_ns + Pair::kStepNs);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }, 1'000'000'000));
  EXPECT_GE(p.now() - t0, 60'000'000u);
  EXPECT_LT(p.now() - t0, 62'000'000u + q.cc.max_pace_gap_ns);
  EXPECT_EQ(drain(*p.a().scq)[0].status, WcStatus::kRetryExceeded);
  EXPECT_EQ(p.a().qp->error(), QpError::kRetryExceeded);
}

// A loaded host: the receiver is descheduled for 300 us in every 1 ms, so
// now and then a round trip takes hundreds of microseconds against a 50 us
// target.  A queue at the bottleneck stretches every round trip, the host
// only some: the delay control, which reacts to the smallest of the last
// few, keeps the link within 5 % as busy as no control does (reacting to
// every sample cost 13 % here).
TEST(SimCcLiveness, LoadedHostKeepsThroughput) {
  LinkImpairment loaded;
  loaded.rate_bps = 10'000'000'000;
  loaded.delay_ns = 2'000;
  loaded.queue_bytes = 1 << 20;
  loaded.stall_period_ns = 1'000'000;
  loaded.stall_ns = 300'000;
  double off_bps = 0;
  for (const CcMode m : {CcMode::kOff, CcMode::kDelay, CcMode::kBoth}) {
    Flows f(43, 1, cc_qp_config(m, 10'000'000'000), loaded, 64 * 1024, 8);
    const FlowsResult r = f.run(4'000'000, 40'000'000);
    EXPECT_EQ(r.failed, 0u);
    if (m == CcMode::kOff) {
      off_bps = r.aggregate_bps();
      EXPECT_GT(off_bps, 9e9);  // the window bridges the stalls
      continue;
    }
    EXPECT_GE(r.aggregate_bps(), 0.95 * off_bps) << cc_mode_name(m);
  }
}

}  // namespace
}  // namespace dpdat::rc::test
