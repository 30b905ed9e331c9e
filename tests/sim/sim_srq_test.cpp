// Shared receive queue in the RC engine: two responder QPs take receives from
// one SRQ in posting order, an empty SRQ answers with RNR until a receive is
// posted, RDMA WRITE with immediate consumes from it too, the low watermark
// fires once, and a QP going to error flushes only the receive it had taken.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "harness.hpp"
#include "rc/srq.hpp"

namespace dpdat::rc::test {
namespace {

constexpr uint32_t kRw = priv::kLocalRead | priv::kLocalWrite | priv::kRemoteWrite;

// Engine A with QPs a[0], a[1]; engine B with b[0], b[1] attached to one SRQ.
class SrqFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineConfig ecfg;
    ecfg.pmtu = 1024;
    for (int i = 0; i < 2; ++i) {
      mr_[i] = std::make_unique<MrTable>(256, 64);
      eng_[i] = std::make_unique<Engine>(link_.end(i), *mr_[i], ecfg);
    }
    srq_ = std::make_unique<Srq>(8);
    QpConfig qc;
    qc.pmtu = 1024;
    qc.rnr_delay_ns = 20'000;
    qc.window = 1;  // one packet in flight: a 2-packet SEND is seen half-received
    for (int q = 0; q < 2; ++q) {
      a_[q] = eng_[0]->create_qp(1, qc, &scq_a_, &rcq_a_);
      b_[q] = eng_[1]->create_qp(1, qc, &scq_b_, &rcq_b_[q]);
      ASSERT_TRUE(b_[q]->attach_srq(srq_.get()));
    }
    for (int q = 0; q < 2; ++q) {
      PathInfo pa, pb;
      pa.local_mac = {2, 0, 0, 0, 0, 1};
      pa.peer_mac = {2, 0, 0, 0, 0, 2};
      pa.local_ip = 0x0A000001;
      pa.peer_ip = 0x0A000002;
      pa.peer_qpn = b_[q]->qpn();
      pa.udp_src_port = static_cast<uint16_t>(0xC000 + q);
      pb.local_mac = pa.peer_mac;
      pb.peer_mac = pa.local_mac;
      pb.local_ip = pa.peer_ip;
      pb.peer_ip = pa.local_ip;
      pb.peer_qpn = a_[q]->qpn();
      pb.udp_src_port = static_cast<uint16_t>(0xC100 + q);
      ASSERT_TRUE(a_[q]->connect(pa, wire::Psn(100), wire::Psn(500)));
      ASSERT_TRUE(b_[q]->connect(pb, wire::Psn(500), wire::Psn(100)));
    }
    src_.assign(4096, 0);
    fill_pattern(src_, 7);
    ASSERT_TRUE(mr_[0]->mr_register(1, src_.data(), va(src_), src_.size(), kRw, &src_lmr_));
    dst_.assign(8 * 2048, 0);
    ASSERT_TRUE(mr_[1]->mr_register(1, dst_.data(), va(dst_), dst_.size(), kRw, &dst_lmr_));
  }

  static uint64_t va(const std::vector<uint8_t>& v) { return reinterpret_cast<uint64_t>(v.data()); }

  template <typename Pred>
  bool run_until(Pred done, uint64_t max_ns = 2'000'000'000ull) {
    const uint64_t end = now_ + max_ns;
    while (now_ < end) {
      if (done()) return true;
      link_.set_now(now_);
      eng_[0]->poll(now_);
      eng_[1]->poll(now_);
      now_ += 1'000;
    }
    return done();
  }

  // Posts receive `i` (2 KiB slot i of dst_) to the SRQ.
  void post_srq(uint32_t i) {
    RecvWr r;
    r.cookie = 1000 + i;
    r.num_sge = 1;
    r.sge[0] = {dst_lmr_, va(dst_) + i * 2048, 2048};
    ASSERT_EQ(srq_->post(r), Srq::PostResult::kOk);
  }

  void send(int q, uint64_t off, uint32_t len, uint64_t cookie) {
    SendWr w;
    w.cookie = cookie;
    w.op = WrOp::kSend;
    w.num_sge = 1;
    w.sge[0] = {src_lmr_, va(src_) + off, len};
    ASSERT_EQ(a_[q]->post_send(w), Qp::PostResult::kOk);
  }

  SimLink link_{11, 4096, 2048};
  std::unique_ptr<MrTable> mr_[2];
  std::unique_ptr<Engine> eng_[2];
  std::unique_ptr<Srq> srq_;
  CompletionQueue scq_a_{256}, rcq_a_{256}, scq_b_{256};
  CompletionQueue rcq_b_[2] = {CompletionQueue{256}, CompletionQueue{256}};
  Qp* a_[2] = {};
  Qp* b_[2] = {};
  std::vector<uint8_t> src_, dst_;
  uint32_t src_lmr_ = 0, dst_lmr_ = 0;
  uint64_t now_ = 1'000'000;
};

TEST_F(SrqFixture, QpsTakeReceivesInPostingOrder) {
  for (uint32_t i = 0; i < 4; ++i) post_srq(i);
  EXPECT_EQ(b_[0]->post_recv(RecvWr{}), Qp::PostResult::kInvalidState);  // SRQ attached
  send(0, 0, 1500, 1);  // two packets: takes receive 0
  ASSERT_TRUE(run_until([&] { return rcq_b_[0].size() == 1; }));
  send(1, 100, 700, 2);  // takes receive 1
  ASSERT_TRUE(run_until([&] { return rcq_b_[1].size() == 1; }));
  send(0, 200, 1, 3);  // takes receive 2
  ASSERT_TRUE(run_until([&] { return rcq_b_[0].size() == 2; }));

  std::vector<Completion> c0 = drain(rcq_b_[0]), c1 = drain(rcq_b_[1]);
  ASSERT_EQ(c0.size(), 2u);
  ASSERT_EQ(c1.size(), 1u);
  EXPECT_EQ(c0[0].cookie, 1000u);
  EXPECT_EQ(c0[0].byte_len, 1500u);
  EXPECT_EQ(c1[0].cookie, 1001u);
  EXPECT_EQ(c1[0].byte_len, 700u);
  EXPECT_EQ(c0[1].cookie, 1002u);
  for (const Completion& c : c0) EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(dst_.data(), src_.data(), 1500), 0);
  EXPECT_EQ(std::memcmp(dst_.data() + 2048, src_.data() + 100, 700), 0);
  EXPECT_EQ(dst_[2 * 2048], src_[200]);
  EXPECT_EQ(srq_->available(), 1u);
  EXPECT_EQ(srq_->outstanding(), 0u);
}

TEST_F(SrqFixture, EmptySrqMeansRnrUntilAReceiveIsPosted) {
  send(0, 0, 64, 1);
  ASSERT_TRUE(run_until([&] { return a_[0]->counters().rnr_naks_rx > 0; }));
  EXPECT_EQ(rcq_b_[0].size(), 0u);
  post_srq(0);
  ASSERT_TRUE(run_until([&] { return rcq_b_[0].size() == 1 && scq_a_.size() == 1; }));
  const std::vector<Completion> c = drain(rcq_b_[0]);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  EXPECT_EQ(c[0].byte_len, 64u);
  EXPECT_EQ(drain(scq_a_)[0].status, WcStatus::kSuccess);
}

TEST_F(SrqFixture, WriteWithImmediateConsumesAnSrqReceive) {
  post_srq(5);
  SendWr w;
  w.cookie = 9;
  w.op = WrOp::kWriteImm;
  w.imm = 0xABCD;
  w.num_sge = 1;
  w.sge[0] = {src_lmr_, va(src_), 300};
  w.remote_va = va(dst_) + 3000;
  w.rkey = dst_lmr_;  // an LMR with remote privileges is its own rkey
  ASSERT_EQ(a_[1]->post_send(w), Qp::PostResult::kOk);
  ASSERT_TRUE(run_until([&] { return rcq_b_[1].size() == 1; }));
  const std::vector<Completion> c = drain(rcq_b_[1]);
  EXPECT_EQ(c[0].op, WcOp::kRecvWriteImm);
  EXPECT_EQ(c[0].cookie, 1005u);
  EXPECT_EQ(c[0].imm, 0xABCDu);
  EXPECT_EQ(std::memcmp(dst_.data() + 3000, src_.data(), 300), 0);
  EXPECT_EQ(srq_->available(), 0u);
}

TEST_F(SrqFixture, LowWatermarkFiresOnceWhenCrossed) {
  for (uint32_t i = 0; i < 4; ++i) post_srq(i);
  srq_->set_low_watermark(3);
  EXPECT_FALSE(srq_->limit_reached());
  send(0, 0, 8, 1);  // 4 -> 3 posted: not below 3
  ASSERT_TRUE(run_until([&] { return rcq_b_[0].size() == 1; }));
  EXPECT_FALSE(srq_->limit_reached());
  send(0, 0, 8, 2);  // 3 -> 2: below
  ASSERT_TRUE(run_until([&] { return rcq_b_[0].size() == 2; }));
  EXPECT_TRUE(srq_->limit_reached());
  EXPECT_FALSE(srq_->limit_reached());  // reported once
  send(0, 0, 8, 3);
  ASSERT_TRUE(run_until([&] { return rcq_b_[0].size() == 3; }));
  EXPECT_FALSE(srq_->limit_reached());  // one-shot until re-armed
  srq_->set_low_watermark(2);           // 1 posted already: fires at once
  EXPECT_TRUE(srq_->limit_reached());
}

TEST_F(SrqFixture, ErrorFlushesOnlyTheTakenReceiveAndResizeKeepsPosted) {
  for (uint32_t i = 0; i < 3; ++i) post_srq(i);
  // b[0] takes a receive for a 2-packet SEND and breaks between the packets
  // (window 1: the second leaves only after the first is acknowledged).
  send(0, 0, 1500, 1);
  ASSERT_TRUE(run_until([&] { return srq_->outstanding() == 1; }));
  ASSERT_EQ(rcq_b_[0].size(), 0u);
  b_[0]->set_error(QpError::kDestroyed, now_);
  ASSERT_TRUE(run_until([&] { return rcq_b_[0].size() == 1; }));
  const std::vector<Completion> c = drain(rcq_b_[0]);
  EXPECT_EQ(c[0].cookie, 1000u);
  EXPECT_EQ(c[0].status, WcStatus::kFlushed);
  EXPECT_EQ(srq_->outstanding(), 0u);
  EXPECT_EQ(srq_->available(), 2u);  // the others stay for b[1]
  EXPECT_FALSE(srq_->resize(1));     // below the number posted
  EXPECT_TRUE(srq_->resize(16));
  EXPECT_EQ(srq_->capacity(), 16u);
  send(1, 0, 10, 2);
  ASSERT_TRUE(run_until([&] { return rcq_b_[1].size() == 1; }));
  EXPECT_EQ(drain(rcq_b_[1])[0].cookie, 1001u);
  const std::vector<RecvWr> left = srq_->drain();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].cookie, 1002u);
}

}  // namespace
}  // namespace dpdat::rc::test
