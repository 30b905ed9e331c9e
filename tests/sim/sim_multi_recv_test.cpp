// Multi-receive WQEs (RecvWr::multi_min): several SENDs land back to back in
// one receive, each completion says where, and the WQE retires with the
// message that leaves less than the minimum free; the receive after it
// takes the next message.  Under go-back-N and selective repeat, with and
// without lost frames (a MIDDLE, a FIRST, and frames of later messages).
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;
constexpr uint64_t kMulti = 16384, kMin = 1500, kPlain = 4096;
// 15501 bytes in the multi-receive (883 left: released by the sixth), then
// one message for the plain receive.
constexpr uint64_t kLens[] = {3000, 1, 2500, 5000, 4000, 1000, 2048};
constexpr size_t kN = std::size(kLens);

class SimMultiRecv : public ::testing::TestWithParam<std::tuple<bool, std::vector<uint32_t>>> {};

TEST_P(SimMultiRecv, MessagesLandBackToBackAndTheLastReleases) {
  QpConfig c;
  c.pmtu = 1024;
  c.selective_repeat = std::get<0>(GetParam());
  const std::vector<uint32_t> drops = std::get<1>(GetParam());
  Pair p(41, c);
  uint32_t sent = 0;
  p.link().set_filter([&](int from_end, const uint8_t*, uint32_t) {
    if (from_end != 0) return true;
    ++sent;
    return std::find(drops.begin(), drops.end(), sent) == drops.end();
  });
  uint64_t total = 0;
  for (uint64_t l : kLens) total += l;
  Buffer src = p.reg(0, total, kLocal);
  Buffer multi = p.reg(1, kMulti, kLocal);
  Buffer plain = p.reg(1, kPlain, kLocal);
  fill_pattern(src.bytes, 5);
  RecvWr m;
  m.cookie = 7;
  m.num_sge = 2;  // two pieces: messages cross from one to the other
  m.sge[0] = Sge{multi.lmr, multi.va(), 6000};
  m.sge[1] = Sge{multi.lmr, multi.va() + 6000, kMulti - 6000};
  m.multi_min = kMin;
  ASSERT_EQ(p.b().qp->post_recv(m), Qp::PostResult::kOk);
  RecvWr r;
  r.cookie = 8;
  r.num_sge = 1;
  r.sge[0] = Sge{plain.lmr, plain.va(), kPlain};
  ASSERT_EQ(p.b().qp->post_recv(r), Qp::PostResult::kOk);
  uint64_t at = 0;
  for (size_t i = 0; i < kN; ++i) {
    SendWr w;
    w.op = WrOp::kSend;
    w.cookie = i;
    w.num_sge = 1;
    w.sge[0] = Sge{src.lmr, src.va() + at, kLens[i]};
    ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
    at += kLens[i];
  }
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == kN && p.b().rcq->size() == kN; }));
  EXPECT_TRUE(p.settle());
  for (const Completion& s : drain(*p.a().scq)) EXPECT_EQ(s.status, WcStatus::kSuccess);
  const auto rc = drain(*p.b().rcq);
  ASSERT_EQ(rc.size(), kN);
  uint64_t off = 0;
  at = 0;
  for (size_t i = 0; i < kN; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(rc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(rc[i].byte_len, kLens[i]);
    const auto want = src.bytes.begin() + static_cast<ptrdiff_t>(at);
    if (i + 1 < kN) {
      EXPECT_EQ(rc[i].cookie, 7u);
      EXPECT_TRUE(rc[i].multi);
      EXPECT_EQ(rc[i].offset, off);
      EXPECT_EQ(rc[i].released, i + 2 == kN);
      EXPECT_TRUE(std::equal(want, want + static_cast<ptrdiff_t>(kLens[i]),
                             multi.bytes.begin() + static_cast<ptrdiff_t>(off)));
      off += kLens[i];
    } else {
      EXPECT_EQ(rc[i].cookie, 8u);
      EXPECT_FALSE(rc[i].multi);
      EXPECT_TRUE(std::equal(want, want + static_cast<ptrdiff_t>(kLens[i]), plain.bytes.begin()));
    }
    at += kLens[i];
  }
  // Nothing was written past the messages.
  EXPECT_TRUE(std::all_of(multi.bytes.begin() + static_cast<ptrdiff_t>(off), multi.bytes.end(),
                          [](uint8_t b) { return b == 0; }));
  EXPECT_EQ(p.b().qp->recv_queue_used(), 0u);
}

// Frames of A, 1-based (1 KiB PMTU): message 0 is 1-3, 1 is 4, 2 is 5-7,
// 3 is 8-12, 4 is 13-16, 5 is 17, 6 is 18-19.
INSTANTIATE_TEST_SUITE_P(Losses, SimMultiRecv,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(std::vector<uint32_t>{},
                                                              std::vector<uint32_t>{2, 5, 9},
                                                              std::vector<uint32_t>{8, 14, 18})));

// A message longer than the room left breaks the connection (as a receive
// too small does), and the multi-receive completes with the error, released.
TEST(SimMultiRecvErrors, TooLongForTheRoomLeft) {
  Pair p(42);
  Buffer src = p.reg(0, 3000, kLocal);
  Buffer multi = p.reg(1, 4096, kLocal);
  RecvWr m;
  m.cookie = 7;
  m.num_sge = 1;
  m.sge[0] = Sge{multi.lmr, multi.va(), 4096};
  m.multi_min = 100;
  ASSERT_EQ(p.b().qp->post_recv(m), Qp::PostResult::kOk);
  for (int i = 0; i < 2; ++i) {
    SendWr w;
    w.op = WrOp::kSend;
    w.cookie = static_cast<uint64_t>(i);
    w.num_sge = 1;
    w.sge[0] = Sge{src.lmr, src.va(), 3000};
    ASSERT_EQ(p.a().qp->post_send(w), Qp::PostResult::kOk);
  }
  ASSERT_TRUE(p.run_until([&] { return p.b().rcq->size() == 2; }));
  const auto rc = drain(*p.b().rcq);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_FALSE(rc[0].released);
  EXPECT_EQ(rc[1].status, WcStatus::kLocalLengthError);
  EXPECT_TRUE(rc[1].multi);
  EXPECT_TRUE(rc[1].released);
  EXPECT_EQ(rc[1].offset, 3000u);
}

}  // namespace
}  // namespace dpdat::rc::test
