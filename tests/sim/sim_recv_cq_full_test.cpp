// A full receive completion queue stalls the responder (CompletionQueue,
// types.hpp: nothing is lost): the receive completions of messages that
// arrive while it is full are all delivered once the consumer drains it.
#include <gtest/gtest.h>

#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kRw = priv::kLocalRead | priv::kLocalWrite;

TEST(SimRecvCqFull, ReceiveCompletionsWaitForRoomAndNoneIsLost) {
  constexpr uint32_t kDepth = 4;  // both completion queues of both sides
  constexpr uint32_t kMsgs = 15;
  constexpr uint64_t kLen = 3000;  // three packets at the default PMTU (1024)
  Pair p(41, QpConfig{}, kDepth);
  Buffer src = p.reg(0, kMsgs * kLen, kRw);
  Buffer dst = p.reg(1, kMsgs * kLen, kRw | priv::kRemoteWrite);
  fill_pattern(src.bytes, 11);
  for (uint32_t i = 0; i < kMsgs; ++i) {
    RecvWr rw;
    rw.cookie = 100 + i;
    rw.num_sge = 1;
    rw.sge[0] = Sge{dst.lmr, dst.va() + i * kLen, kLen};
    ASSERT_EQ(p.b().qp->post_recv(rw), Qp::PostResult::kOk);
  }
  // SENDs, and every third message an RDMA WRITE with immediate data (which
  // consumes a receive too).
  for (uint32_t i = 0; i < kMsgs; ++i) {
    SendWr wr;
    wr.cookie = i;
    wr.num_sge = 1;
    wr.sge[0] = Sge{src.lmr, src.va() + i * kLen, kLen};
    if (i % 3 == 2) {
      wr.op = WrOp::kWriteImm;
      wr.remote_va = dst.va() + i * kLen;
      wr.rkey = dst.lmr;
      wr.imm = 0xA000 + i;
    }
    ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  }

  // Nobody drains for a while: the receive queue fills up and stays full.
  ASSERT_TRUE(p.run_until([&] { return p.b().rcq->full(); }));
  p.run_until([] { return false; }, 20'000'000);
  EXPECT_EQ(p.b().rcq->size(), kDepth);

  std::vector<Completion> recvs, sends;
  for (int round = 0; round < 200 && (recvs.size() < kMsgs || sends.size() < kMsgs); ++round) {
    for (const Completion& c : drain(*p.b().rcq)) recvs.push_back(c);
    for (const Completion& c : drain(*p.a().scq)) sends.push_back(c);
    p.run_until([&] { return p.b().rcq->full() || p.a().scq->full(); }, 20'000'000);
  }
  ASSERT_EQ(recvs.size(), kMsgs);
  ASSERT_EQ(sends.size(), kMsgs);
  for (uint32_t i = 0; i < kMsgs; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(recvs[i].cookie, 100u + i);
    EXPECT_EQ(recvs[i].status, WcStatus::kSuccess);
    EXPECT_EQ(recvs[i].byte_len, kLen);
    if (i % 3 == 2) {
      EXPECT_EQ(recvs[i].op, WcOp::kRecvWriteImm);
      EXPECT_TRUE(recvs[i].has_imm);
      EXPECT_EQ(recvs[i].imm, 0xA000u + i);
    } else {
      EXPECT_EQ(recvs[i].op, WcOp::kRecv);
    }
    EXPECT_EQ(sends[i].cookie, i);
    EXPECT_EQ(sends[i].status, WcStatus::kSuccess);
  }
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_EQ(p.a().qp->state(), QpState::kRts);
  EXPECT_EQ(p.b().qp->state(), QpState::kRts);
  EXPECT_TRUE(p.settle());
}

}  // namespace
}  // namespace dpdat::rc::test
