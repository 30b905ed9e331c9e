// The simulated link's bottleneck model: a finite rate, a byte-limited FIFO
// that drops on overflow, ECN marking (CE) of ECN-capable frames above a
// threshold (a step, or RED's rising probability between Kmin and Kmax), and
// the queueing delay frames met.  Requests carry ECT(0).
#include <gtest/gtest.h>

#include <cstring>

#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;
constexpr uint64_t kLen = 1 << 20;

struct Outcome {
  uint64_t ns = 0;
  LinkStats a_to_b;
  uint64_t b_parse_drops = 0;
};

Outcome write_through(
    const LinkImpairment& imp, const QpConfig& c = [] {
      QpConfig q;
      q.pmtu = 1024;
      return q;
    }()) {
  Pair p(31, c);
  p.link().set_impairment(0, imp);
  Buffer src = p.reg(0, kLen, kLocal);
  Buffer dst = p.reg(1, kLen, kLocal | priv::kRemoteWrite);
  fill_pattern(src.bytes, 4);
  const uint64_t t0 = p.now();
  EXPECT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, kLen)), Qp::PostResult::kOk);
  EXPECT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  Outcome r;
  r.ns = p.now() - t0;
  const auto cs = drain(*p.a().scq);
  EXPECT_EQ(cs.size(), 1u);
  if (!cs.empty()) {
    EXPECT_EQ(cs[0].status, WcStatus::kSuccess);
  }
  EXPECT_EQ(src.bytes, dst.bytes);
  r.a_to_b = p.link().stats(0);
  r.b_parse_drops = p.b().engine->counters().rx_dropped_parse;
  return r;
}

TEST(SimBottleneck, RateBoundsTheTransfer) {
  LinkImpairment imp;
  imp.rate_bps = 10'000'000'000;  // 10 Gb/s
  imp.delay_ns = 2'000;
  const Outcome r = write_through(imp);
  const double gbps = static_cast<double>(kLen) * 8 / static_cast<double>(r.ns);
  EXPECT_LE(gbps, 10.0);
  EXPECT_GE(gbps, 8.0);  // headers, ACK round trips: most of the rate is goodput
  EXPECT_EQ(r.a_to_b.overflow_drops, 0u);
  EXPECT_GT(r.a_to_b.queue_delay_max_ns, 0u);  // the window queues at the bottleneck
}

TEST(SimBottleneck, OverflowDropsAndRecovery) {
  LinkImpairment imp;
  imp.rate_bps = 1'000'000'000;
  imp.queue_bytes = 16 * 1024;  // less than the 128-packet window
  const Outcome r = write_through(imp);
  EXPECT_GT(r.a_to_b.overflow_drops, 0u);
  EXPECT_EQ(r.a_to_b.dropped, 0u);  // no random loss: every drop was the queue's
  // At most 16 KiB waited: its delay is bounded by that backlog at 1 Gb/s.
  EXPECT_LE(r.a_to_b.queue_delay_max_ns, 16 * 1024 * 8 + 1'000u);
}

TEST(SimBottleneck, EcnCapableFramesAreMarkedAboveTheThreshold) {
  LinkImpairment imp;
  imp.rate_bps = 1'000'000'000;
  imp.ecn_threshold_bytes = 8 * 1024;
  const Outcome r = write_through(imp);
  EXPECT_GT(r.a_to_b.ecn_marked, 0u);
  EXPECT_EQ(r.b_parse_drops, 0u);  // CE and the re-computed IPv4 checksum parse cleanly
  EXPECT_EQ(r.a_to_b.overflow_drops, 0u);
  EXPECT_GT(r.a_to_b.queue_delay_quantile(0.99), r.a_to_b.queue_delay_quantile(0.01));
  EXPECT_GE(r.a_to_b.queue_delay_quantile(0.99), 8 * 1024 * 8u);  // past the threshold

  QpConfig not_ect;
  not_ect.pmtu = 1024;
  not_ect.ecn_capable = false;
  EXPECT_EQ(write_through(imp, not_ect).a_to_b.ecn_marked, 0u);
}

// RED: nothing below Kmin, a probability rising with the backlog up to Pmax
// between Kmin and Kmax, everything from Kmax on.  Frames of 1,000 bytes
// offered back to back at one instant find a backlog of 1,000 bytes per
// frame ahead of them; the link then drains before the next round.
TEST(SimBottleneck, RedMarkingProbabilityRisesBetweenThresholds) {
  constexpr uint32_t kLenFrame = 1000, kFrames = 120, kRounds = 40;
  constexpr uint64_t kMin = 20'000, kMax = 80'000;
  constexpr double kPmax = 0.5;
  SimLink link(7, 512, 512);
  LinkImpairment imp;
  imp.rate_bps = 1'000'000'000;
  imp.ecn_threshold_bytes = kMin;
  imp.ecn_max_bytes = kMax;
  imp.ecn_pmax = kPmax;
  link.set_impairment(0, imp);
  // Marks by backlog band: below Kmin, lower and upper half of the ramp, above Kmax.
  uint64_t marked[4] = {}, seen[4] = {};
  uint64_t now = 1'000'000;
  for (uint32_t round = 0; round < kRounds; ++round) {
    link.set_now(now);
    Frame f[kFrames];
    ASSERT_EQ(link.end(0).tx_alloc(f, kFrames, kLenFrame), kFrames);
    for (uint32_t i = 0; i < kFrames; ++i) {
      std::memset(f[i].data, 0, kLenFrame);
      f[i].data[15] = 0x02;                     // IPv4 TOS: ECT(0)
      f[i].data[16] = static_cast<uint8_t>(i);  // which frame (backlog i * 1,000 bytes)
      f[i].len = kLenFrame;
    }
    ASSERT_EQ(link.end(0).tx_burst(f, kFrames), kFrames);
    now += 10'000'000;  // the 120 KB drain in ~1 ms
    link.set_now(now);
    Frame rx[kFrames];
    ASSERT_EQ(link.end(1).rx_burst(rx, kFrames), kFrames);
    for (uint32_t i = 0; i < kFrames; ++i) {
      const uint64_t backlog = uint64_t{rx[i].data[16]} * kLenFrame;
      const size_t band = backlog < kMin                ? 0
                          : backlog < (kMin + kMax) / 2 ? 1
                          : backlog < kMax              ? 2
                                                        : 3;
      seen[band]++;
      marked[band] += (rx[i].data[15] & 3u) == 3u ? 1 : 0;
    }
    link.end(1).rx_release(rx, kFrames);
  }
  const auto frac = [&](int b) {
    return static_cast<double>(marked[b]) / static_cast<double>(seen[b]);
  };
  EXPECT_EQ(marked[0], 0u);
  // Mean odds over each half of the ramp: Pmax / 4 and 3 Pmax / 4.
  EXPECT_NEAR(frac(1), kPmax / 4, 0.06);
  EXPECT_NEAR(frac(2), 3 * kPmax / 4, 0.06);
  EXPECT_EQ(marked[3], seen[3]);
  EXPECT_EQ(link.stats(0).ecn_marked, marked[1] + marked[2] + marked[3]);
}

}  // namespace
}  // namespace dpdat::rc::test
