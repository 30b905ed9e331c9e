// The RC engine over two net_ring ports in one process: every operation at
// sizes 0 B .. 4 MiB, byte-exact, progressed inline by the test thread.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "dpdk/eal.hpp"
#include "dpdk/loopback.hpp"

namespace dpdat {
namespace {

using rc::priv::kLocalRead;
using rc::priv::kLocalWrite;
constexpr uint32_t kAllRemote = kLocalRead | kLocalWrite | rc::priv::kRemoteRead |
                                rc::priv::kRemoteWrite | rc::priv::kRemoteAtomic;

struct Mem {
  std::vector<uint8_t> bytes;
  uint32_t lmr = 0;
  uint64_t va() const { return reinterpret_cast<uint64_t>(bytes.data()); }
};

Mem reg(dpdk::Endpoint& e, size_t n, uint32_t priv, uint8_t fill = 0) {
  Mem m;
  m.bytes.assign(n == 0 ? 1 : n, fill);
  EXPECT_TRUE(e.mr->mr_register(e.pz, m.bytes.data(), m.va(), n, priv, &m.lmr));
  return m;
}

// Deregister before the memory goes, as a consumer must.
void unreg(dpdk::Endpoint& e, const Mem& m) {
  bool in_use = true;
  EXPECT_EQ(e.mr->mr_free(m.lmr, &in_use), rc::AccessError::kOk);
  EXPECT_FALSE(in_use);
}

std::string stats(dpdk::Endpoint& e) {
  const auto& q = e.qp->counters();
  const auto& p = e.port->counters();
  const auto& g = e.engine->counters();
  std::ostringstream o;
  o << "qp tx=" << q.tx_packets << " rx=" << q.rx_packets << " retrans=" << q.retransmits
    << " timeouts=" << q.timeouts << " seqnak_rx=" << q.seq_naks_rx
    << " seqnak_tx=" << q.seq_naks_tx << " dup=" << q.duplicates_rx << " ooo=" << q.out_of_order_rx
    << " read_replays=" << q.read_replays << " txbp=" << q.tx_backpressure
    << " | port tx=" << p.tx_packets << " rx=" << p.rx_packets << " txfull=" << p.tx_full
    << " allocfail=" << p.tx_alloc_fail << " | eng parse_drop=" << g.rx_dropped_parse
    << " noqp=" << g.rx_no_qp << " bp=" << g.tx_backpressure;
  return o.str();
}

bool same(const Mem& x, const Mem& y, size_t n) {
  return std::equal(x.bytes.begin(), x.bytes.begin() + static_cast<long>(n), y.bytes.begin());
}

void pattern(std::vector<uint8_t>& v, uint64_t seed) {
  std::mt19937_64 r(seed);
  for (auto& b : v) b = static_cast<uint8_t>(r());
}

class Loop : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& eal = dpdk::eal_init();
    ASSERT_TRUE(eal.ok) << eal.error;
    std::string err;
    rc::QpConfig q;
    q.pmtu = 1024;
    ASSERT_TRUE(lo_.open(q, &err)) << err;
  }
  dpdk::Loopback lo_;
};

const size_t kSizes[] = {0, 1, 1023, 1024, 1025, 65536, 1u << 20, 4u << 20};

TEST_F(Loop, EalSecondInitIsReused) {
  const auto& a = dpdk::eal_init();
  const auto& b = dpdk::eal_init();
  EXPECT_TRUE(a.ok && b.ok);
  EXPECT_EQ(&a, &b);
}

TEST_F(Loop, WriteReadAllSizes) {
  for (size_t n : kSizes) {
    Mem src = reg(lo_.a(), n, kLocalRead | kLocalWrite);
    pattern(src.bytes, n);
    Mem dst = reg(lo_.b(), n, kAllRemote);
    Mem back = reg(lo_.a(), n, kLocalRead | kLocalWrite);
    rc::SendWr w;
    w.op = rc::WrOp::kWrite;
    w.num_sge = 1;
    w.sge[0] = rc::Sge{src.lmr, src.va(), n};
    w.remote_va = dst.va();
    w.rkey = dst.lmr;
    ASSERT_EQ(lo_.a().qp->post_send(w), rc::Qp::PostResult::kOk);
    rc::SendWr r = w;
    r.op = rc::WrOp::kRead;
    r.sge[0] = rc::Sge{back.lmr, back.va(), n};
    ASSERT_EQ(lo_.a().qp->post_send(r), rc::Qp::PostResult::kOk);
    ASSERT_TRUE(lo_.run_until([&] { return lo_.a().scq->size() == 2; })) << n;
    rc::Completion c;
    while (lo_.a().scq->pop(&c))
      EXPECT_EQ(c.status, rc::WcStatus::kSuccess)
          << n << "\nA: " << stats(lo_.a()) << "\nB: " << stats(lo_.b());
    EXPECT_TRUE(same(src, dst, n)) << n;
    EXPECT_TRUE(same(src, back, n)) << n;
    unreg(lo_.a(), src);
    unreg(lo_.b(), dst);
    unreg(lo_.a(), back);
  }
}

TEST_F(Loop, SendRecvWithImmediateAllSizes) {
  for (size_t n : kSizes) {
    Mem src = reg(lo_.a(), n, kLocalRead | kLocalWrite);
    pattern(src.bytes, n + 1);
    Mem dst = reg(lo_.b(), n, kLocalRead | kLocalWrite);
    rc::RecvWr rw;
    rw.num_sge = 1;
    rw.sge[0] = rc::Sge{dst.lmr, dst.va(), n};
    ASSERT_EQ(lo_.b().qp->post_recv(rw), rc::Qp::PostResult::kOk);
    rc::SendWr s;
    s.op = rc::WrOp::kSendImm;
    s.imm = static_cast<uint32_t>(n);
    s.num_sge = 1;
    s.sge[0] = rc::Sge{src.lmr, src.va(), n};
    ASSERT_EQ(lo_.a().qp->post_send(s), rc::Qp::PostResult::kOk);
    ASSERT_TRUE(
        lo_.run_until([&] { return lo_.a().scq->size() == 1 && lo_.b().rcq->size() == 1; }));
    rc::Completion c;
    ASSERT_TRUE(lo_.b().rcq->pop(&c));
    EXPECT_EQ(c.status, rc::WcStatus::kSuccess);
    EXPECT_EQ(c.byte_len, n);
    EXPECT_TRUE(c.has_imm);
    EXPECT_EQ(c.imm, static_cast<uint32_t>(n));
    ASSERT_TRUE(lo_.a().scq->pop(&c));
    EXPECT_EQ(c.status, rc::WcStatus::kSuccess);
    EXPECT_TRUE(same(src, dst, n)) << n;
    unreg(lo_.a(), src);
    unreg(lo_.b(), dst);
  }
}

TEST_F(Loop, WriteWithImmediateAndAtomics) {
  Mem src = reg(lo_.a(), 5000, kLocalRead | kLocalWrite);
  pattern(src.bytes, 5);
  Mem dst = reg(lo_.b(), 5000, kAllRemote);
  rc::RecvWr rw;
  ASSERT_EQ(lo_.b().qp->post_recv(rw), rc::Qp::PostResult::kOk);
  rc::SendWr w;
  w.op = rc::WrOp::kWriteImm;
  w.imm = 0xFEED;
  w.num_sge = 1;
  w.sge[0] = rc::Sge{src.lmr, src.va(), 5000};
  w.remote_va = dst.va();
  w.rkey = dst.lmr;
  ASSERT_EQ(lo_.a().qp->post_send(w), rc::Qp::PostResult::kOk);
  Mem res = reg(lo_.a(), 8, kLocalRead | kLocalWrite);
  Mem counter = reg(lo_.b(), 8, kAllRemote);
  for (int i = 0; i < 10; ++i) {
    rc::SendWr fa;
    fa.op = rc::WrOp::kFetchAdd;
    fa.num_sge = 1;
    fa.sge[0] = rc::Sge{res.lmr, res.va(), 8};
    fa.remote_va = counter.va();
    fa.rkey = counter.lmr;
    fa.swap_add = 3;
    ASSERT_EQ(lo_.a().qp->post_send(fa), rc::Qp::PostResult::kOk);
  }
  ASSERT_TRUE(lo_.run_until([&] { return lo_.a().scq->size() == 11 && lo_.b().rcq->size() == 1; }));
  rc::Completion c;
  ASSERT_TRUE(lo_.b().rcq->pop(&c));
  EXPECT_EQ(c.op, rc::WcOp::kRecvWriteImm);
  EXPECT_EQ(c.imm, 0xFEEDu);
  EXPECT_EQ(src.bytes, dst.bytes);
  uint64_t v = 0, last = 0;
  std::memcpy(&v, counter.bytes.data(), 8);
  std::memcpy(&last, res.bytes.data(), 8);
  EXPECT_EQ(v, 30u);
  EXPECT_EQ(last, 27u);
  while (lo_.a().scq->pop(&c)) EXPECT_EQ(c.status, rc::WcStatus::kSuccess);
  // Every frame on the link went through the port counters.
  EXPECT_GT(lo_.a().port->counters().tx_packets, 11u);
  EXPECT_EQ(lo_.a().port->counters().rx_multiseg_dropped, 0u);
}

}  // namespace
}  // namespace dpdat
