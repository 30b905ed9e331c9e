// Dedicated engine threads (progress mode 1) over the in-process net_ring
// link: the test thread is the consumer, handing work requests through the
// lock-free inbox and polling the SPSC completion queues; idle engines back
// off instead of burning their cores.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <random>
#include <thread>

#include "dpdk/eal.hpp"
#include "dpdk/loopback.hpp"
#include "rc/engine/engine_runner.hpp"

namespace dpdat {
namespace {

uint64_t clock_ns() { return dpdk::steady_now_ns(); }

struct Buf {
  std::vector<uint8_t> bytes;
  uint32_t lmr = 0;
  uint64_t va() const { return reinterpret_cast<uint64_t>(bytes.data()); }
};

Buf reg(dpdk::Endpoint& e, size_t n) {
  Buf b;
  b.bytes.assign(n, 0);
  EXPECT_TRUE(e.mr->mr_register(e.pz, b.bytes.data(), b.va(), n, rc::priv::kAll, &b.lmr));
  return b;
}

bool wait_pop(rc::CompletionQueue& cq, rc::Completion* c, uint64_t timeout_ns = 10'000'000'000ull) {
  const uint64_t end = clock_ns() + timeout_ns;
  while (!cq.pop(c)) {
    if (clock_ns() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(Runner, ThreadedEnginesMoveDataAndBackOffWhenIdle) {
  ASSERT_TRUE(dpdk::eal_init().ok);
  dpdk::Loopback lo;
  std::string err;
  rc::QpConfig q;
  q.pmtu = 1024;
  ASSERT_TRUE(lo.open(q, &err)) << err;
  rc::RunnerConfig rcfg;
  rcfg.policy = rc::IdlePolicy::kBackoff;
  rcfg.spin_us = 200;
  rcfg.max_sleep_us = 500;
  rc::EngineRunner ra(*lo.a().engine, rcfg, &clock_ns);
  rc::EngineRunner rb(*lo.b().engine, rcfg, &clock_ns);
  ra.start();
  rb.start();

  const size_t n = 1 << 20;
  Buf src = reg(lo.a(), n), dst = reg(lo.b(), n), back = reg(lo.a(), n), rbuf = reg(lo.b(), n);
  std::mt19937 rng(3);
  for (auto& b : src.bytes) b = static_cast<uint8_t>(rng());
  for (int round = 0; round < 20; ++round) {
    rc::SendWr w;
    w.op = rc::WrOp::kWrite;
    w.cookie = static_cast<uint64_t>(round);
    w.num_sge = 1;
    w.sge[0] = rc::Sge{src.lmr, src.va(), n};
    w.remote_va = dst.va();
    w.rkey = dst.lmr;
    ASSERT_TRUE(ra.post_send(lo.a().qp, w));
  }
  rc::SendWr r;
  r.op = rc::WrOp::kRead;
  r.cookie = 99;
  r.num_sge = 1;
  r.sge[0] = rc::Sge{back.lmr, back.va(), n};
  r.remote_va = dst.va();
  r.rkey = dst.lmr;
  ASSERT_TRUE(ra.post_send(lo.a().qp, r));
  rc::RecvWr rw;
  rw.cookie = 7;
  rw.num_sge = 1;
  rw.sge[0] = rc::Sge{rbuf.lmr, rbuf.va(), n};
  ASSERT_TRUE(rb.post_recv(lo.b().qp, rw));
  rc::SendWr s;
  s.op = rc::WrOp::kSendImm;
  s.imm = 0xABCD;
  s.cookie = 100;
  s.num_sge = 1;
  s.sge[0] = rc::Sge{src.lmr, src.va(), n};
  ASSERT_TRUE(ra.post_send(lo.a().qp, s));

  for (uint64_t want = 0; want < 22; ++want) {
    rc::Completion c;
    ASSERT_TRUE(wait_pop(*lo.a().scq, &c)) << "completion " << want;
    EXPECT_EQ(c.status, rc::WcStatus::kSuccess);
    EXPECT_EQ(c.cookie, want < 20 ? want : want == 20 ? 99u : 100u);
  }
  rc::Completion rc_;
  ASSERT_TRUE(wait_pop(*lo.b().rcq, &rc_));
  EXPECT_EQ(rc_.cookie, 7u);
  EXPECT_EQ(rc_.imm, 0xABCDu);
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_EQ(src.bytes, back.bytes);
  EXPECT_EQ(src.bytes, rbuf.bytes);

  // Idle: both engine threads must mostly sleep.
  const double a0 = ra.cpu_seconds(), b0 = rb.cpu_seconds();
  const uint64_t t0 = clock_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const double wall = static_cast<double>(clock_ns() - t0) / 1e9;
  const double busy = (ra.cpu_seconds() - a0 + rb.cpu_seconds() - b0) / (2 * wall);
  EXPECT_LT(busy, 0.2) << "idle engine threads used " << busy * 100 << "% of a core each";
  EXPECT_GT(ra.counters().sleeps, 0u);

  // And they wake promptly for new work.
  const uint64_t t1 = clock_ns();
  rc::SendWr small;
  small.op = rc::WrOp::kWrite;
  small.num_sge = 1;
  small.sge[0] = rc::Sge{src.lmr, src.va(), 8};
  small.remote_va = dst.va();
  small.rkey = dst.lmr;
  ASSERT_TRUE(ra.post_send(lo.a().qp, small));
  rc::Completion c;
  ASSERT_TRUE(wait_pop(*lo.a().scq, &c));
  EXPECT_LT(clock_ns() - t1, 50'000'000u);  // far below the idle period: woken, not timed out
  ra.stop();
  rb.stop();
}

TEST(Runner, RefusedWorkRequestCompletesInError) {
  ASSERT_TRUE(dpdk::eal_init().ok);
  dpdk::Loopback lo;
  std::string err;
  ASSERT_TRUE(lo.open(rc::QpConfig{}, &err)) << err;
  rc::EngineRunner ra(*lo.a().engine, rc::RunnerConfig{}, &clock_ns);
  ra.start();
  rc::SendWr many;
  many.cookie = 5;
  many.num_sge = rc::kMaxSge + 1;  // malformed
  ASSERT_TRUE(ra.post_send(lo.a().qp, many));
  rc::Completion c;
  ASSERT_TRUE(wait_pop(*lo.a().scq, &c));
  EXPECT_EQ(c.cookie, 5u);
  EXPECT_EQ(c.status, rc::WcStatus::kLocalQpOperationError);
  EXPECT_EQ(ra.counters().rejected_posts, 1u);
  // call() runs on the engine thread and returns after it ran.
  bool ran = false;
  ra.call([&] { ran = true; });
  EXPECT_TRUE(ran);
  ra.stop();
}

// Refused requests whose error completions find the completion queue full
// wait for room: every one is reported, in order, none dropped.
TEST(Runner, RefusedWorkRequestsWaitForCompletionQueueRoom) {
  ASSERT_TRUE(dpdk::eal_init().ok);
  dpdk::Loopback lo;
  std::string err;
  ASSERT_TRUE(lo.open(rc::QpConfig{}, &err, /*cq_depth=*/8)) << err;
  rc::EngineRunner ra(*lo.a().engine, rc::RunnerConfig{}, &clock_ns);
  ra.start();
  constexpr uint64_t kPosts = 40;  // five times the queue
  for (uint64_t i = 0; i < kPosts; ++i) {
    rc::SendWr bad;
    bad.cookie = 100 + i;
    bad.num_sge = rc::kMaxSge + 1;  // malformed: refused by the queue pair
    ASSERT_TRUE(ra.post_send(lo.a().qp, bad));
  }
  // Let the runner fill the queue and wait on it, then drain it in turns.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (uint64_t i = 0; i < kPosts; ++i) {
    rc::Completion c;
    ASSERT_TRUE(wait_pop(*lo.a().scq, &c)) << "completion " << i << " lost";
    EXPECT_EQ(c.cookie, 100 + i);
    EXPECT_EQ(c.status, rc::WcStatus::kLocalQpOperationError);
  }
  EXPECT_EQ(ra.counters().rejected_posts, kPosts);
  rc::Completion extra;
  EXPECT_FALSE(lo.a().scq->pop(&extra));
  ra.stop();
}

}  // namespace
}  // namespace dpdat
