// The simulated link's bottleneck model: a finite rate, a byte-limited FIFO
// that drops on overflow, ECN marking (CE) of ECN-capable frames above a
// threshold, and the queueing delay frames met.  Requests carry ECT(0).
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dpdat::rc::test
