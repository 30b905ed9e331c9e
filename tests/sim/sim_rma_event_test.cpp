// Remote access counters (Qp::set_rma_counters and a region's,
// MrTable::mr_set_rma_counters; libfabric's FI_RMA_EVENT): the responder counts each RDMA WRITE
// (with or without immediate, of one packet or many) and each READ exactly once, under loss: WRITEs
// placed ahead of a hole by selective repeat count when the hole fills, requests sent again (a lost
// ACK or READ response, a go-back-N rewind) and READs repeated for their lost responses do not
// count again.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <tuple>

#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;
constexpr uint32_t kPmtu = 1024;

struct Op {
  WrOp op;
  uint64_t len;
};
// One round: WRITEs of one packet, of a few, of many, of a partial last
// packet; WRITEs with immediate; READs of one and of many responses.
constexpr Op kRound[] = {
    {WrOp::kWrite, 1},       {WrOp::kWriteImm, 100}, {WrOp::kRead, 64},    {WrOp::kWrite, 5000},
    {WrOp::kWriteImm, 3000}, {WrOp::kRead, 10000},   {WrOp::kWrite, 1024}, {WrOp::kWrite, 16384},
    {WrOp::kWriteImm, 8192}, {WrOp::kRead, 4096},    {WrOp::kWrite, 2048}, {WrOp::kWrite, 300},
};
constexpr int kRounds = 6;
constexpr uint64_t kSlot = 16384;  // each operation's bytes in the buffers

// (selective repeat, loss per mille of the frames A sends, of those B sends)
class SimRmaEvent : public ::testing::TestWithParam<std::tuple<bool, int, int>> {};

TEST_P(SimRmaEvent, EachWriteAndReadCountsOnce) {
  const auto [sr, loss_a, loss_b] = GetParam();
  QpConfig c;
  c.pmtu = kPmtu;
  c.selective_repeat = sr;
  Pair p(static_cast<uint64_t>(7 + loss_a + 3 * loss_b), c);
  std::mt19937 rng(static_cast<uint32_t>(1000 * loss_a + loss_b + (sr ? 1 : 0)));
  p.link().set_filter([&](int from_end, const uint8_t*, uint32_t) {
    const int loss = from_end == 0 ? loss_a : loss_b;
    return static_cast<int>(rng() % 1000) >= loss;
  });
  std::atomic<uint64_t> writes{0}, reads{0};
  p.b().qp->set_rma_counters(&writes, &reads);

  constexpr size_t kOps = std::size(kRound) * kRounds;
  Buffer a = p.reg(0, kOps * kSlot, kLocal);
  Buffer b = p.reg(1, kOps * kSlot, kLocal | priv::kRemoteRead | priv::kRemoteWrite);
  Buffer rb = p.reg(1, 64, kLocal);
  // The region's own counters too (fi_mr_bind).
  std::atomic<uint64_t> mr_writes{0}, mr_reads{0};
  ASSERT_TRUE(p.b().mr->mr_set_rma_counters(b.lmr, &mr_writes, &mr_reads));
  fill_pattern(a.bytes, 1);
  fill_pattern(b.bytes, 2);
  uint64_t want_writes = 0, want_reads = 0;
  for (size_t i = 0; i < kOps; ++i) {
    const Op& o = kRound[i % std::size(kRound)];
    SendWr w = rdma_wr(o.op, a, b, o.len, i);
    w.sge[0].va += i * kSlot;
    w.remote_va += i * kSlot;
    w.flags = wr_flag::kSignaled;
    if (o.op == WrOp::kWriteImm) {
      w.imm = static_cast<uint32_t>(i);
      RecvWr r;
      r.cookie = i;
      r.num_sge = 1;
      r.sge[0] = Sge{rb.lmr, rb.va(), 64};
      ASSERT_EQ(p.b().qp->post_recv(r), Qp::PostResult::kOk);
    }
    (o.op == WrOp::kRead ? want_reads : want_writes)++;
    ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
  }
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == kOps; }));
  for (const Completion& s : drain(*p.a().scq)) ASSERT_EQ(s.status, WcStatus::kSuccess);
  EXPECT_TRUE(p.settle());
  EXPECT_EQ(writes.load(), want_writes);
  EXPECT_EQ(reads.load(), want_reads);
  EXPECT_EQ(mr_writes.load(), want_writes);
  EXPECT_EQ(mr_reads.load(), want_reads);
  // Every byte moved: the counts are of transfers that happened.
  for (size_t i = 0; i < kOps; ++i) {
    const Op& o = kRound[i % std::size(kRound)];
    const uint8_t* src = (o.op == WrOp::kRead ? b : a).data() + i * kSlot;
    const uint8_t* dst = (o.op == WrOp::kRead ? a : b).data() + i * kSlot;
    ASSERT_TRUE(std::equal(src, src + o.len, dst)) << i;
  }
  // The losses made what the counting must survive: requests sent again
  // (duplicates at the responder), and with selective repeat WRITEs placed
  // ahead of a hole.
  const QpCounters& cb = p.b().qp->counters();
  if (loss_b > 0) {
    EXPECT_GT(cb.duplicates_rx, 0u);
    EXPECT_GT(cb.read_replays, 0u);
  }
  if (sr && loss_a > 0) {
    EXPECT_GT(cb.sr_placed_ahead, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Losses, SimRmaEvent,
                         ::testing::Values(std::make_tuple(true, 0, 0),
                                           std::make_tuple(true, 30, 0),
                                           std::make_tuple(true, 30, 30),
                                           std::make_tuple(true, 0, 50),
                                           std::make_tuple(false, 30, 30)));

// No counters set: nothing is counted, and the queue pair works as before.
TEST(SimRmaEventUnset, CountsNothingWithoutCounters) {
  Pair p(9);
  std::atomic<uint64_t> writes{0}, reads{0};
  p.b().qp->set_rma_counters(&writes, &reads);
  p.b().qp->set_rma_counters(nullptr, nullptr);
  Buffer a = p.reg(0, 4096, kLocal);
  Buffer b = p.reg(1, 4096, kLocal | priv::kRemoteWrite);
  SendWr w = rdma_wr(WrOp::kWrite, a, b, 4096, 1);
  w.flags = wr_flag::kSignaled;
  ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  EXPECT_EQ(writes.load(), 0u);
  EXPECT_EQ(reads.load(), 0u);
}

}  // namespace
}  // namespace dpdat::rc::test
