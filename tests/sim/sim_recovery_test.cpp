// Recovery at the speed of the link: the retransmission timeout adapts to the
// measured round trip (and still declares a dead peer no earlier than the
// fixed schedule would), and a lost tail is recovered by the tail-loss probe
// within a few round trips instead of a timeout.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;
constexpr uint64_t kOneWayNs = 5'000;
constexpr uint64_t kMsg = 4096;  // four 1 KiB packets

QpConfig cfg(bool adaptive, bool tlp) {
  QpConfig c;
  c.pmtu = 1024;
  c.retransmit_timeout_ns = 1'000'000;
  c.adaptive_rto = adaptive;
  c.tail_loss_probe = tlp;
  return c;
}

bool is_seq_nak(const uint8_t* data, uint32_t len) {
  wire::PacketView v;
  return wire::parse_packet(std::span<const uint8_t>(data, len),
                            wire::ParseOptions{.pmtu = 4096, .full_segments = false},
                            v) == wire::Reject::kNone &&
         v.opcode == wire::Opcode::kAck &&
         v.aeth->syndrome == wire::aeth::make(wire::aeth::kNak, wire::aeth::kNakPsnSeqError);
}

bool is_sack(const uint8_t* data, uint32_t len) {
  wire::PacketView v;
  return wire::parse_packet(std::span<const uint8_t>(data, len),
                            wire::ParseOptions{.pmtu = 4096, .full_segments = false},
                            v) == wire::Reject::kNone &&
         v.opcode == wire::Opcode::kSack;
}

struct Flow {
  Pair p;
  Buffer src, dst;
  uint64_t cookie = 0;
  // Frames A offers from now on; the one numbered `drop_nth` (1-based) is
  // lost, and so is `drop_nth2`.
  uint32_t seen = 0, drop_nth = 0, drop_nth2 = 0;
  bool b_silent = false;      // everything B sends is lost (a vanished peer)
  uint32_t naks_to_drop = 0;  // B's next sequence-error NAKs lost (and the SACKs before them)

  explicit Flow(const QpConfig& c) : p(21, c) {
    src = p.reg(0, kMsg, kLocal);
    dst = p.reg(1, kMsg, kLocal | priv::kRemoteWrite);
    fill_pattern(src.bytes, 5);
    LinkImpairment imp;
    imp.delay_ns = kOneWayNs;
    p.link().set_impairment(0, imp);
    p.link().set_impairment(1, imp);
    p.link().set_filter([this](int from_end, const uint8_t* data, uint32_t len) {
      if (from_end == 1) {
        if (b_silent) return false;
        // The NAK's selective acknowledgement goes just before it.
        if (naks_to_drop > 0 && is_sack(data, len)) return false;
        if (naks_to_drop > 0 && is_seq_nak(data, len)) {
          --naks_to_drop;
          return false;
        }
        return true;
      }
      ++seen;
      return seen != drop_nth && seen != drop_nth2;
    });
  }
  // One WRITE of kMsg bytes to completion; its duration in virtual time.
  uint64_t write() {
    const uint64_t t0 = p.now();
    EXPECT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, kMsg, ++cookie)),
              Qp::PostResult::kOk);
    EXPECT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
    const auto cs = drain(*p.a().scq);
    EXPECT_EQ(cs.size(), 1u);
    if (!cs.empty()) {
      EXPECT_EQ(cs[0].status, WcStatus::kSuccess);
    }
    return p.now() - t0;
  }
  void warm_up() {
    for (int i = 0; i < 20; ++i) (void)write();
  }
  // The next WRITE loses its last packet once.
  uint64_t write_losing_tail() {
    seen = 0;
    drop_nth = static_cast<uint32_t>(kMsg / 1024);
    const uint64_t t = write();
    drop_nth = 0;
    EXPECT_TRUE(p.settle());
    EXPECT_EQ(src.bytes, dst.bytes);
    return t;
  }
};

TEST(AdaptiveRto, TimeoutFollowsTheMeasuredRoundTrip) {
  Flow f(cfg(/*adaptive=*/true, /*tlp=*/false));
  f.warm_up();
  const RttEstimator& rtt = f.p.a().qp->rtt();
  ASSERT_TRUE(rtt.valid());
  EXPECT_GE(f.p.a().qp->counters().rtt_samples, 10u);
  // A round trip is two 5 us hops plus a few 1 us engine steps.
  EXPECT_GE(rtt.srtt_ns(), 2 * kOneWayNs);
  EXPECT_LT(rtt.srtt_ns(), 4 * kOneWayNs);
  EXPECT_EQ(rtt.rto_ns(), QpConfig{}.rto_min_ns);  // SRTT + 4 RTTVAR is below the floor
  // A lost tail costs one timeout at the adapted RTO, not at the 1 ms default.
  const uint64_t t = f.write_losing_tail();
  EXPECT_EQ(f.p.a().qp->counters().timeouts, 1u);
  EXPECT_LT(t, 200'000u);
}

// One thread drives both engines in turn (inline progress), and is away for
// `gap` between two turns: A's first poll back comes before B had a chance
// to answer.  A judges no loss there; it reads B's answer at its next poll.
void expect_no_loss_judged_after_a_gap(Flow& f, uint64_t gap, uint64_t* t_out) {
  Qp& qa = *f.p.a().qp;
  Engine& ea = *f.p.a().engine;
  Engine& eb = *f.p.b().engine;
  const uint64_t timeouts = qa.counters().timeouts, probes = qa.counters().tlp_probes;
  const uint64_t deferred = ea.counters().timers_deferred;
  ASSERT_EQ(qa.post_send(rdma_wr(WrOp::kWrite, f.src, f.dst, kMsg, ++f.cookie)),
            Qp::PostResult::kOk);
  uint64_t t = f.p.now();
  f.p.link().set_now(t);
  ea.poll(t);  // the WRITE leaves
  eb.poll(t);
  t += gap;  // the driver is away (descheduled)
  f.p.link().set_now(t);
  ea.poll(t);  // back: A's timers are overdue, B has not run yet
  eb.poll(t);  // B takes the WRITE and answers
  for (int i = 0; i < 40 && f.p.a().scq->empty(); ++i) {
    t += 1'000;
    f.p.link().set_now(t);
    ea.poll(t);
    eb.poll(t);
  }
  ASSERT_EQ(f.p.a().scq->size(), 1u);
  EXPECT_EQ(drain(*f.p.a().scq)[0].status, WcStatus::kSuccess);
  EXPECT_EQ(qa.counters().timeouts, timeouts) << "gap " << gap << " ns";
  EXPECT_EQ(qa.counters().tlp_probes, probes) << "gap " << gap << " ns";
  EXPECT_GT(ea.counters().timers_deferred, deferred);
  *t_out = t;
}

TEST(AdaptiveRto, NoTimeoutJudgedRightAfterAGap) {
  Flow f(cfg(/*adaptive=*/true, /*tlp=*/true));
  f.warm_up();
  const uint64_t rto = f.p.a().qp->rtt().rto_ns();
  Qp& qa = *f.p.a().qp;
  Engine& ea = *f.p.a().engine;
  Engine& eb = *f.p.b().engine;
  uint64_t t = 0;
  ASSERT_NO_FATAL_FAILURE(expect_no_loss_judged_after_a_gap(f, 10 * rto, &t));
  // Away far longer than the longest a timer is ever held past due (a time
  // slice on a loaded host): the timers that fell due while away still wait
  // for B's first turn back.
  ASSERT_NO_FATAL_FAILURE(
      expect_no_loss_judged_after_a_gap(f, 10 * EngineConfig{}.timer_lag_max_ns, &t));
  const uint64_t timeouts = qa.counters().timeouts, probes = qa.counters().tlp_probes;

  // B silent: A, polling without gaps, still times out and resends (at the
  // RTO as it stands now: the answers that waited out the gaps were round
  // trip samples too).
  f.b_silent = true;
  const uint64_t rto_now = qa.rtt().rto_ns();
  ASSERT_EQ(qa.post_send(rdma_wr(WrOp::kWrite, f.src, f.dst, kMsg, ++f.cookie)),
            Qp::PostResult::kOk);
  const uint64_t step = std::max<uint64_t>(1'000, rto_now / 200);
  for (uint64_t end = t + 20 * rto_now; t < end; t += step) {
    f.p.link().set_now(t);
    ea.poll(t);
    eb.poll(t);
  }
  EXPECT_GT(qa.counters().timeouts + qa.counters().tlp_probes, timeouts + probes);
}

TEST(AdaptiveRto, FixedTimeoutWaitsTheConfiguredTime) {
  // The same loss without adaptation: the 1 ms timeout decides.
  Flow f(cfg(/*adaptive=*/false, /*tlp=*/false));
  f.warm_up();
  EXPECT_EQ(f.p.a().qp->rtt().rto_ns(), 1'000'000u);
  const uint64_t t = f.write_losing_tail();
  EXPECT_EQ(f.p.a().qp->counters().timeouts, 1u);
  EXPECT_GE(t, 1'000'000u);
}

TEST(AdaptiveRto, DeadPeerStillTakesTheFixedScheduleTime) {
  QpConfig c = cfg(true, false);
  c.retry_count = 4;
  c.retransmit_timeout_ns = 500'000;
  Flow f(c);
  f.warm_up();
  ASSERT_LT(f.p.a().qp->rtt().rto_ns(), 100'000u);
  f.b_silent = true;
  const uint64_t t0 = f.p.now();
  ASSERT_EQ(f.p.a().qp->post_send(rdma_wr(WrOp::kWrite, f.src, f.dst, kMsg)), Qp::PostResult::kOk);
  ASSERT_TRUE(f.p.run_until([&] { return f.p.a().scq->size() == 1; }));
  EXPECT_EQ(drain(*f.p.a().scq)[0].status, WcStatus::kRetryExceeded);
  // The fixed schedule from the first timeout: 1 + 2 + 4 + 8 ms; the first
  // timeout comes one adapted RTO after the send.
  const uint64_t took = f.p.now() - t0;
  EXPECT_GE(took, 15'000'000u);
  EXPECT_LT(took, 15'000'000u + 200'000u);
  // ... with more, faster retries than the fixed schedule's five timeouts.
  EXPECT_GT(f.p.a().qp->counters().timeouts, 5u);
}

// A timeout that was spurious (every packet arrived; only the peer's ACKs
// were late) costs two packets with selective repeat, not the window.
TEST(AdaptiveRto, SpuriousTimeoutResendsTwoPacketsNotTheWindow) {
  for (bool sr : {true, false}) {
    QpConfig c = cfg(/*adaptive=*/true, /*tlp=*/false);
    c.selective_repeat = sr;
    Flow f(c);
    f.warm_up();
    Buffer big_src = f.p.reg(0, 65536, kLocal);
    Buffer big_dst = f.p.reg(1, 65536, kLocal | priv::kRemoteWrite);
    fill_pattern(big_src.bytes, 3);
    // B's answers are lost until A has timed out once.
    bool silent = true;
    uint32_t after_timeout = 0;
    f.p.link().set_filter([&](int from_end, const uint8_t*, uint32_t) {
      const bool timed_out = f.p.a().qp->counters().timeouts > 0;
      if (from_end == 0) {
        if (timed_out) ++after_timeout;
        return true;
      }
      if (timed_out) silent = false;
      return !silent;
    });
    ASSERT_EQ(f.p.a().qp->post_send(rdma_wr(WrOp::kWrite, big_src, big_dst, 65536, 99)),
              Qp::PostResult::kOk);
    ASSERT_TRUE(f.p.run_until([&] { return f.p.a().scq->size() == 1; }));
    EXPECT_EQ(drain(*f.p.a().scq)[0].status, WcStatus::kSuccess);
    EXPECT_EQ(big_src.bytes, big_dst.bytes);
    EXPECT_EQ(f.p.a().qp->counters().timeouts, 1u);
    if (sr) {
      EXPECT_EQ(after_timeout, 2u);  // the oldest and the newest packet
    } else {
      EXPECT_EQ(after_timeout, 64u);  // go-back-N: all 64 packets of the WRITE
    }
  }
}

TEST(TailLossProbe, LostTailRecoveredWithoutTimeout) {
  // The fixed 1 ms timeout, so the probe alone is judged.
  Flow f(cfg(/*adaptive=*/false, /*tlp=*/true));
  f.warm_up();
  const uint64_t srtt = f.p.a().qp->rtt().srtt_ns();
  const uint64_t t = f.write_losing_tail();
  EXPECT_EQ(f.p.a().qp->counters().tlp_probes, 1u);
  EXPECT_EQ(f.p.a().qp->counters().timeouts, 0u);
  // The first three packets are acknowledged after the responder's ACK
  // coalescing delay; the probe follows max(2 SRTT, tlp_min_ns) later, and
  // its ACK one round trip after that (plus engine steps).
  const QpConfig d;
  EXPECT_LT(t, d.ack_delay_ns + srtt + std::max(2 * srtt, d.tlp_min_ns) + 2 * srtt);
}

// A hole whose NAK is lost, and nothing after it that asks for an answer
// (the responder repeats its NAK on such packets): the probe resends the
// newest packet, the responder sees it again and repeats the NAK, the hole
// is resent.
TEST(TailLossProbe, LostNakRecoveredWithoutTimeout) {
  Flow f(cfg(/*adaptive=*/false, /*tlp=*/true));
  f.warm_up();
  f.seen = 0;
  f.drop_nth = 3;  // packet 3 of 4: the NAK comes with the last one
  f.naks_to_drop = 1;
  const uint64_t t = f.write();
  ASSERT_TRUE(f.p.settle());
  EXPECT_EQ(f.src.bytes, f.dst.bytes);
  EXPECT_EQ(f.naks_to_drop, 0u);  // the NAK was sent, and lost
  EXPECT_EQ(f.p.a().qp->counters().timeouts, 0u);
  EXPECT_GE(f.p.a().qp->counters().tlp_probes, 1u);
  EXPECT_EQ(f.p.a().qp->counters().seq_naks_rx, 1u);  // the repeated one
  EXPECT_LT(t, 200'000u);
}

// A hole whose selective resend is lost too: the probe resends the hole.
TEST(TailLossProbe, LostResendRecoveredWithoutTimeout) {
  Flow f(cfg(/*adaptive=*/false, /*tlp=*/true));
  f.warm_up();
  f.seen = 0;
  f.drop_nth = 2;   // packet 2 of 4
  f.drop_nth2 = 5;  // its resend after the NAK
  const uint64_t t = f.write();
  ASSERT_TRUE(f.p.settle());
  EXPECT_EQ(f.src.bytes, f.dst.bytes);
  EXPECT_GE(f.seen, 6u);
  EXPECT_EQ(f.p.a().qp->counters().timeouts, 0u);
  EXPECT_EQ(f.p.a().qp->counters().tlp_probes, 1u);
  // The NAK, and its repeat on the last packet (AckReq), which found the
  // resend in flight; none after the probe: it went to the hole.
  EXPECT_EQ(f.p.a().qp->counters().seq_naks_rx, 2u);
  EXPECT_LT(t, 200'000u);
}

TEST(TailLossProbe, NoProbeWithoutLoss) {
  Flow f(cfg(true, true));
  f.warm_up();
  EXPECT_EQ(f.p.a().qp->counters().tlp_probes, 0u);
  EXPECT_EQ(f.p.a().qp->counters().timeouts, 0u);
  EXPECT_EQ(f.p.a().qp->counters().retransmits, 0u);
}

}  // namespace
}  // namespace dpdat::rc::test
