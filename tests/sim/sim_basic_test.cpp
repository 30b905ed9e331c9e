// Basic operations over a clean simulated link: each op once, byte-exact.
#include <gtest/gtest.h>

#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kRw = priv::kLocalRead | priv::kLocalWrite;
constexpr uint32_t kAllRemote = priv::kAll | priv::kRemoteAtomic;

SendWr make_wr(WrOp op, const Buffer& local, uint64_t len, uint64_t cookie) {
  SendWr wr;
  wr.op = op;
  wr.cookie = cookie;
  wr.num_sge = 1;
  wr.sge[0] = Sge{local.lmr, local.va(), len};
  return wr;
}

TEST(SimBasic, SendRecvSmall) {
  Pair p(1);
  Buffer src = p.reg(0, 100, kRw);
  Buffer dst = p.reg(1, 100, kRw);
  fill_pattern(src.bytes, 7);
  RecvWr rw;
  rw.cookie = 55;
  rw.num_sge = 1;
  rw.sge[0] = Sge{dst.lmr, dst.va(), 100};
  ASSERT_EQ(p.b().qp->post_recv(rw), Qp::PostResult::kOk);
  ASSERT_EQ(p.a().qp->post_send(make_wr(WrOp::kSend, src, 100, 9)), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1 && p.b().rcq->size() == 1; }));
  auto sc = drain(*p.a().scq);
  auto rc = drain(*p.b().rcq);
  EXPECT_EQ(sc[0].cookie, 9u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].cookie, 55u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].byte_len, 100u);
  EXPECT_EQ(src.bytes, dst.bytes);
}

TEST(SimBasic, WriteReadLarge) {
  Pair p(2);
  const size_t n = 100'000;
  Buffer src = p.reg(0, n, kRw);
  Buffer dst = p.reg(1, n, kRw | priv::kRemoteWrite | priv::kRemoteRead);
  Buffer back = p.reg(0, n, kRw);
  fill_pattern(src.bytes, 3);
  SendWr w = make_wr(WrOp::kWrite, src, n, 1);
  w.remote_va = dst.va();
  w.rkey = dst.lmr;
  ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
  SendWr r = make_wr(WrOp::kRead, back, n, 2);
  r.remote_va = dst.va();
  r.rkey = dst.lmr;
  ASSERT_EQ(p.a().qp->post_send(r), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 2; }));
  auto sc = drain(*p.a().scq);
  EXPECT_EQ(sc[0].cookie, 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(sc[1].cookie, 2u);
  EXPECT_EQ(sc[1].status, WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_EQ(src.bytes, back.bytes);
  EXPECT_TRUE(p.settle());
}

TEST(SimBasic, Atomics) {
  Pair p(3);
  Buffer target = p.reg(1, 16, kAllRemote);
  uint64_t init = 40;
  std::memcpy(target.data(), &init, 8);
  Buffer res = p.reg(0, 8, kRw);
  SendWr fa = make_wr(WrOp::kFetchAdd, res, 8, 1);
  fa.remote_va = target.va();
  fa.rkey = target.lmr;
  fa.swap_add = 2;
  ASSERT_EQ(p.a().qp->post_send(fa), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 1; }));
  uint64_t got;
  std::memcpy(&got, res.data(), 8);
  EXPECT_EQ(got, 40u);
  SendWr cs = make_wr(WrOp::kCompareSwap, res, 8, 2);
  cs.remote_va = target.va();
  cs.rkey = target.lmr;
  cs.compare = 42;
  cs.swap_add = 1000;
  ASSERT_EQ(p.a().qp->post_send(cs), Qp::PostResult::kOk);
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == 2; }));
  std::memcpy(&got, res.data(), 8);
  EXPECT_EQ(got, 42u);
  std::memcpy(&got, target.data(), 8);
  EXPECT_EQ(got, 1000u);
  for (auto& c : drain(*p.a().scq)) EXPECT_EQ(c.status, WcStatus::kSuccess);
}

}  // namespace
}  // namespace dpdat::rc::test
