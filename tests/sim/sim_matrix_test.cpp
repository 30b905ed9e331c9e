// Every operation at every boundary size, under 0/1/5/10 % loss with
// reordering, duplication and corruption, over many seeds: destination
// memory byte-exact, completions exactly once and in posting order.
#include <gtest/gtest.h>

#include <tuple>

#include "harness.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kPmtu = 1024;
constexpr uint32_t kLocal = priv::kLocalRead | priv::kLocalWrite;

struct Scenario {
  double loss;
  uint64_t seed;
  bool selective_repeat;
};

QpConfig config(bool sr) {
  QpConfig c;
  c.pmtu = kPmtu;
  c.selective_repeat = sr;
  c.retry_count = 15;
  return c;
}

void impair(Pair& p, double loss) {
  LinkImpairment imp;
  imp.loss = loss;
  if (loss > 0) {
    imp.duplicate = 0.01;
    imp.reorder = 0.02;
    imp.corrupt = 0.005;
  }
  p.link().set_impairment(0, imp);
  p.link().set_impairment(1, imp);
}

std::vector<size_t> sizes(uint64_t seed) {
  std::vector<size_t> s = {0, 1, kPmtu - 1, kPmtu, kPmtu + 1, 64 * 1024};
  if (seed % 4 == 0) s.push_back(1024 * 1024);  // the big one on a quarter of the seeds
  return s;
}

class Matrix : public ::testing::TestWithParam<std::tuple<double, uint64_t, bool>> {
 protected:
  Scenario sc() const {
    return Scenario{std::get<0>(GetParam()), std::get<1>(GetParam()), std::get<2>(GetParam())};
  }
};

// Three back-to-back messages of one kind per size, so pipelining and
// ordering are exercised, each with its own data pattern.
constexpr size_t kMsgs = 3;

TEST_P(Matrix, SendAndSendImm) {
  const Scenario s = sc();
  for (size_t n : sizes(s.seed)) {
    Pair p(s.seed * 1000 + n, config(s.selective_repeat));
    impair(p, s.loss);
    std::vector<Buffer> src, dst;
    for (size_t m = 0; m < kMsgs; ++m) {
      src.push_back(p.reg(0, n, kLocal));
      fill_pattern(src.back().bytes, s.seed + static_cast<uint64_t>(m));
      dst.push_back(p.reg(1, n + 8, kLocal, 0xEE));  // 8 spare bytes must stay untouched
      RecvWr rw;
      rw.cookie = 100 + static_cast<uint64_t>(m);
      rw.num_sge = 1;
      rw.sge[0] = Sge{dst.back().lmr, dst.back().va(), n + 8};
      ASSERT_EQ(p.b().qp->post_recv(rw), Qp::PostResult::kOk);
    }
    for (size_t m = 0; m < kMsgs; ++m) {
      SendWr wr;
      wr.op = m == 1 ? WrOp::kSendImm : WrOp::kSend;
      wr.imm = 0xABC00000u + static_cast<uint32_t>(m);
      wr.cookie = static_cast<uint64_t>(m);
      wr.num_sge = 1;
      wr.sge[0] = Sge{src[m].lmr, src[m].va(), n};
      ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
    }
    ASSERT_TRUE(p.run_until([&] {
      return p.a().scq->size() == kMsgs && p.b().rcq->size() == kMsgs;
    })) << "size "
        << n << " loss " << s.loss;
    ASSERT_TRUE(p.settle()) << "size " << n;
    auto sc_ = drain(*p.a().scq);
    auto rc_ = drain(*p.b().rcq);
    ASSERT_EQ(sc_.size(), size_t{kMsgs});
    ASSERT_EQ(rc_.size(), size_t{kMsgs});
    for (size_t m = 0; m < kMsgs; ++m) {
      EXPECT_EQ(sc_[m].cookie, static_cast<uint64_t>(m));
      EXPECT_EQ(sc_[m].status, WcStatus::kSuccess) << wc_status_name(sc_[m].status);
      EXPECT_EQ(rc_[m].cookie, 100u + static_cast<uint64_t>(m));
      EXPECT_EQ(rc_[m].status, WcStatus::kSuccess) << wc_status_name(rc_[m].status);
      EXPECT_EQ(rc_[m].byte_len, n);
      EXPECT_EQ(rc_[m].has_imm, m == 1);
      if (m == 1) {
        EXPECT_EQ(rc_[m].imm, 0xABC00001u);
      }
      EXPECT_TRUE(std::equal(src[m].bytes.begin(), src[m].bytes.begin() + static_cast<long>(n),
                             dst[m].bytes.begin()))
          << "size " << n << " msg " << m;
      for (size_t i = n; i < n + 8; ++i) ASSERT_EQ(dst[m].bytes[i], 0xEE) << "spill at " << i;
    }
    EXPECT_EQ(p.a().qp->state(), QpState::kRts);
  }
}

TEST_P(Matrix, WriteAndWriteImm) {
  const Scenario s = sc();
  for (size_t n : sizes(s.seed)) {
    Pair p(s.seed * 2000 + n, config(s.selective_repeat));
    impair(p, s.loss);
    // One remote region with guard bytes on both sides that stay outside.
    Buffer remote = p.reg(1, 0, 0);  // placeholder slot, replaced below
    std::vector<uint8_t> arena(kMsgs * (n + 16) + 16, 0xEE);
    uint32_t rkey = 0;
    ASSERT_TRUE(p.b().mr->mr_register(p.b().pz, arena.data() + 8,
                                      reinterpret_cast<uint64_t>(arena.data() + 8),
                                      kMsgs * (n + 16), kLocal | priv::kRemoteWrite, &rkey));
    std::vector<Buffer> src;
    for (size_t m = 0; m < kMsgs; ++m) {
      src.push_back(p.reg(0, n, kLocal));
      fill_pattern(src.back().bytes, s.seed * 7 + static_cast<uint64_t>(m));
    }
    RecvWr rw;
    rw.cookie = 77;
    ASSERT_EQ(p.b().qp->post_recv(rw), Qp::PostResult::kOk);  // for the WRITE with immediate
    for (size_t m = 0; m < kMsgs; ++m) {
      SendWr wr;
      wr.op = m == 2 ? WrOp::kWriteImm : WrOp::kWrite;
      wr.imm = 0x5EED;
      wr.cookie = static_cast<uint64_t>(m);
      wr.num_sge = 1;
      wr.sge[0] = Sge{src[m].lmr, src[m].va(), n};
      wr.remote_va =
          reinterpret_cast<uint64_t>(arena.data() + 8) + static_cast<uint64_t>(m) * (n + 16);
      wr.rkey = rkey;
      ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
    }
    ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == kMsgs && p.b().rcq->size() == 1; }))
        << "size " << n << " loss " << s.loss;
    ASSERT_TRUE(p.settle());
    auto sc_ = drain(*p.a().scq);
    auto rc_ = drain(*p.b().rcq);
    ASSERT_EQ(sc_.size(), size_t{kMsgs});
    ASSERT_EQ(rc_.size(), 1u);
    EXPECT_EQ(rc_[0].op, WcOp::kRecvWriteImm);
    EXPECT_EQ(rc_[0].imm, 0x5EEDu);
    EXPECT_EQ(rc_[0].byte_len, n);
    for (size_t m = 0; m < kMsgs; ++m) {
      EXPECT_EQ(sc_[m].cookie, static_cast<uint64_t>(m));
      EXPECT_EQ(sc_[m].status, WcStatus::kSuccess) << wc_status_name(sc_[m].status);
      const uint8_t* at = arena.data() + 8 + static_cast<size_t>(m) * (n + 16);
      EXPECT_TRUE(std::equal(src[m].bytes.begin(), src[m].bytes.begin() + static_cast<long>(n), at))
          << "size " << n << " msg " << m;
      for (size_t i = n; i < n + 16; ++i) ASSERT_EQ(at[i], 0xEE) << "spill at " << i;
    }
    for (size_t i = 0; i < 8; ++i) ASSERT_EQ(arena[i], 0xEE);
  }
}

TEST_P(Matrix, Read) {
  const Scenario s = sc();
  for (size_t n : sizes(s.seed)) {
    Pair p(s.seed * 3000 + n, config(s.selective_repeat));
    impair(p, s.loss);
    Buffer remote = p.reg(1, n * kMsgs, kLocal | priv::kRemoteRead);
    fill_pattern(remote.bytes, s.seed * 11);
    std::vector<Buffer> local;
    for (size_t m = 0; m < kMsgs; ++m) {
      local.push_back(p.reg(0, n + 8, kLocal, 0xEE));
      SendWr wr;
      wr.op = WrOp::kRead;
      wr.cookie = static_cast<uint64_t>(m);
      wr.num_sge = 1;
      wr.sge[0] = Sge{local.back().lmr, local.back().va(), n};
      wr.remote_va = remote.va() + static_cast<uint64_t>(m) * n;
      wr.rkey = remote.lmr;
      ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
    }
    ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == kMsgs; }))
        << "size " << n << " loss " << s.loss;
    ASSERT_TRUE(p.settle());
    auto sc_ = drain(*p.a().scq);
    ASSERT_EQ(sc_.size(), size_t{kMsgs});
    for (size_t m = 0; m < kMsgs; ++m) {
      EXPECT_EQ(sc_[m].cookie, static_cast<uint64_t>(m));
      EXPECT_EQ(sc_[m].status, WcStatus::kSuccess) << wc_status_name(sc_[m].status);
      EXPECT_EQ(sc_[m].byte_len, n);
      EXPECT_TRUE(std::equal(local[m].bytes.begin(), local[m].bytes.begin() + static_cast<long>(n),
                             remote.bytes.begin() + static_cast<long>(static_cast<size_t>(m) * n)))
          << "size " << n << " msg " << m;
      for (size_t i = n; i < n + 8; ++i) ASSERT_EQ(local[m].bytes[i], 0xEE);
    }
  }
}

// Atomics execute exactly once however often requests or ACKs are lost:
// 40 fetch-adds of 1 return 0..39 in order, then compare-swap chains.
TEST_P(Matrix, AtomicsExactlyOnce) {
  const Scenario s = sc();
  Pair p(s.seed * 4000, config(s.selective_repeat));
  impair(p, s.loss);
  Buffer target = p.reg(1, 8, kLocal | priv::kRemoteAtomic);
  constexpr int kN = 40;
  std::vector<Buffer> res;
  for (int i = 0; i < kN; ++i) {
    res.push_back(p.reg(0, 8, kLocal, 0xFF));
    SendWr wr;
    wr.op = i % 2 == 0 ? WrOp::kFetchAdd : WrOp::kCompareSwap;
    wr.cookie = static_cast<uint64_t>(i);
    wr.num_sge = 1;
    wr.sge[0] = Sge{res.back().lmr, res.back().va(), 8};
    wr.remote_va = target.va();
    wr.rkey = target.lmr;
    wr.swap_add = 1;  // FA: +1;  CS: if == i then i+1
    wr.compare = static_cast<uint64_t>(i);
    if (wr.op == WrOp::kCompareSwap) wr.swap_add = static_cast<uint64_t>(i) + 1;
    ASSERT_EQ(p.a().qp->post_send(wr), Qp::PostResult::kOk);
  }
  ASSERT_TRUE(p.run_until([&] { return p.a().scq->size() == kN; })) << "loss " << s.loss;
  auto c = drain(*p.a().scq);
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(c[static_cast<size_t>(i)].cookie, static_cast<uint64_t>(i));
    EXPECT_EQ(c[static_cast<size_t>(i)].status, WcStatus::kSuccess);
    uint64_t orig;
    std::memcpy(&orig, res[static_cast<size_t>(i)].data(), 8);
    EXPECT_EQ(orig, static_cast<uint64_t>(i)) << "atomic " << i;
  }
  uint64_t final_value;
  std::memcpy(&final_value, target.data(), 8);
  EXPECT_EQ(final_value, static_cast<uint64_t>(kN));
}

std::string name(const ::testing::TestParamInfo<Matrix::ParamType>& i) {
  return "loss" + std::to_string(static_cast<int>(std::get<0>(i.param) * 100)) + "_seed" +
         std::to_string(std::get<1>(i.param)) + (std::get<2>(i.param) ? "_sr" : "_gbn");
}

INSTANTIATE_TEST_SUITE_P(Lossless, Matrix,
                         ::testing::Combine(::testing::Values(0.0), ::testing::Values(1, 2),
                                            ::testing::Values(true, false)),
                         name);
INSTANTIATE_TEST_SUITE_P(Lossy, Matrix,
                         ::testing::Combine(::testing::Values(0.01, 0.05, 0.10),
                                            ::testing::Range<uint64_t>(1, 9),
                                            ::testing::Values(true, false)),
                         name);

}  // namespace
}  // namespace dpdat::rc::test
