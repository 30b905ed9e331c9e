// A forged request that takes a PSN of the honest requester: the pair must
// not keep exchanging packets forever (found by tests/fuzz/qp_fuzz,
// regressions/qp/seq-nak-livelock).
#include <gtest/gtest.h>

#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;

// The responder's expected PSN is moved past the PSN of a READ by a copy of
// the requester's previous WRITE with the next PSN (what an attacker who
// sees the traffic can send): the READ's retransmissions are duplicates
// the responder cannot replay, and the requests after it (a SEND, then
// selective-repeat WRITEs the responder places and, when they come again,
// answers with its NAK once more) draw sequence NAKs naming the READ's second
// PSN.  Those NAKs acknowledge nothing new, so
// they spend the transport retries and the requester gives up with
// retry-exceeded instead of resending the READ every poll forever.
TEST(ForgedPsn, SequenceNaksWithoutProgressSpendTheRetries) {
  QpConfig qc;
  qc.pmtu = 512;
  qc.retry_count = 3;
  Pair p(11, qc);
  Buffer src = p.reg(0, 4096, kLocal, 0x11);
  Buffer dst = p.reg(1, 4096, kLocal | priv::kRemoteRead | priv::kRemoteWrite, 0x22);
  Buffer rd = p.reg(0, 4096, kLocal);
  Buffer rcv = p.reg(1, 4096, kLocal);
  p.link().set_capture(true);

  ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, 1, 1)), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return !p.a().scq->empty(); }, 10'000'000));
  ASSERT_EQ(drain(*p.a().scq).at(0).status, WcStatus::kSuccess);

  // The forged copy: the WRITE with PSN + 1, its ICRC recomputed.
  std::vector<uint8_t> forged;
  for (const auto& c : p.link().captured()) {
    wire::PacketView v;
    if (c.from_end == 0 &&
        wire::parse_packet(c.bytes, wire::ParseOptions{.pmtu = 4096, .full_segments = false}, v) ==
            wire::Reject::kNone &&
        v.opcode == wire::Opcode::kWriteOnly) {
      forged = c.bytes;
      auto* bth = reinterpret_cast<wire::Bth*>(forged.data() + wire::kL2L3L4Size);
      bth->set_psn(v.bth->psn() + 1);
      const uint32_t icrc = wire::icrc_compute(forged.data(), forged.size() - wire::kIcrcSize);
      for (size_t i = 0; i < 4; ++i)
        forged[forged.size() - 4 + i] = static_cast<uint8_t>(icrc >> (8 * i));
      break;
    }
  }
  ASSERT_FALSE(forged.empty());
  p.link().inject(1, forged.data(), static_cast<uint32_t>(forged.size()));
  p.settle(1'000'000);

  RecvWr r;
  r.cookie = 7;
  r.num_sge = 1;
  r.sge[0] = Sge{rcv.lmr, rcv.va(), 4096};
  ASSERT_EQ(p.b().qp->post_recv(r), Qp::PostResult::kOk);
  ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kRead, rd, dst, 1024, 2)), Qp::PostResult::kOk);
  SendWr s;
  s.op = WrOp::kSend;
  s.cookie = 3;
  s.num_sge = 1;
  s.sge[0] = Sge{src.lmr, src.va(), 100};
  ASSERT_EQ(p.a().qp->post_send(s), Qp::PostResult::kOk);
  // Selective-repeat WRITEs after the hole: placed out of order, and their
  // retransmissions make the responder repeat its NAK.
  ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, 512, 4)), Qp::PostResult::kOk);
  ASSERT_EQ(p.a().qp->post_send(rdma_wr(WrOp::kWrite, src, dst, 8, 5)), Qp::PostResult::kOk);

  std::vector<Completion> done;
  const bool finished = p.run_until(
      [&] {
        for (const auto& c : drain(*p.a().scq)) done.push_back(c);
        return done.size() == 4;
      },
      50'000'000);
  ASSERT_TRUE(finished) << "requests still pending after 50 ms; A sent "
                        << p.a().qp->counters().tx_packets << " packets";
  EXPECT_EQ(done[0].cookie, 2u);
  EXPECT_EQ(done[0].status, WcStatus::kRetryExceeded);
  for (size_t i = 1; i < done.size(); ++i) EXPECT_EQ(done[i].status, WcStatus::kFlushed);
  EXPECT_EQ(p.a().qp->state(), QpState::kError);
  EXPECT_EQ(p.a().qp->error(), QpError::kRetryExceeded);
  EXPECT_LT(p.a().qp->counters().tx_packets, 100u);
}

}  // namespace
}  // namespace dpdat::rc::test
