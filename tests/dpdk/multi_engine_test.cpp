// Several engines per interface: two net_ring ports with two queue pairs
// each, one engine per queue, queue pairs spread over the engines.  Frames
// for a queue pair owned by the other engine are handed over in software.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "dpdk/eal.hpp"
#include "dpdk/loopback.hpp"
#include "dpdk/port.hpp"
#include "dpdk/telemetry.hpp"
#include "rc/engine/engine_group.hpp"
#include "rc/engine/engine_runner.hpp"
#include "rc/qp/qp.hpp"

namespace dpdat {
namespace {

uint64_t clock_ns() { return dpdk::steady_now_ns(); }

struct Side {
  std::unique_ptr<dpdk::Port> port;
  std::unique_ptr<rc::MrTable> mr;
  std::unique_ptr<rc::EngineGroup> group;
  std::vector<std::unique_ptr<rc::Engine>> engines;
  ~Side() {
    engines.clear();  // buffers back before the port's pool goes
    port.reset();
  }
};

struct Conn {
  rc::Qp* qa = nullptr;
  rc::Qp* qb = nullptr;
  std::unique_ptr<rc::CompletionQueue> scq, rcq, scq_b, rcq_b;
};

class MultiEngine : public ::testing::Test {
 protected:
  static constexpr uint16_t kEngines = 2;
  void SetUp() override {
    ASSERT_TRUE(dpdk::eal_init().ok);
    static int inst = 0;
    const std::string name = "dpdat_me" + std::to_string(inst++);
    uint16_t pa = 0, pb = 0;
    std::string err;
    ASSERT_TRUE(dpdk::Port::make_ring_link(name, &pa, &pb, &err, kEngines)) << err;
    const uint16_t ids[2] = {pa, pb};
    for (int s = 0; s < 2; ++s) {
      dpdk::PortConfig pc;
      pc.name = name + (s == 0 ? "a" : "b");
      pc.ip = 0xC0A80101u + static_cast<uint32_t>(s);
      pc.queues = kEngines;
      side_[s].port = dpdk::Port::open(ids[s], pc, &err);
      ASSERT_TRUE(side_[s].port) << err;
      ASSERT_EQ(side_[s].port->queues(), kEngines);
      side_[s].mr = std::make_unique<rc::MrTable>(64, 8);
      side_[s].group = std::make_unique<rc::EngineGroup>(kEngines);
      for (uint16_t e = 0; e < kEngines; ++e) {
        rc::EngineConfig ec;
        ec.pmtu = 4096;
        ec.max_qps = 64;
        ec.qpn_base = rc::EngineGroup::qpn_base(e);
        side_[s].engines.push_back(
            std::make_unique<rc::Engine>(side_[s].port->queue(e), *side_[s].mr, ec));
        side_[s].engines.back()->join_group(side_[s].group.get(), e);
      }
    }
  }
  // A connection between engine ea on side A and engine eb on side B.
  Conn connect(uint16_t ea, uint16_t eb) {
    Conn c;
    c.scq = std::make_unique<rc::CompletionQueue>(1024);
    c.rcq = std::make_unique<rc::CompletionQueue>(1024);
    c.scq_b = std::make_unique<rc::CompletionQueue>(1024);
    c.rcq_b = std::make_unique<rc::CompletionQueue>(1024);
    rc::QpConfig q;
    q.pmtu = 1024;
    c.qa = side_[0].engines[ea]->create_qp(1, q, c.scq.get(), c.rcq.get());
    c.qb = side_[1].engines[eb]->create_qp(1, q, c.scq_b.get(), c.rcq_b.get());
    rc::PathInfo pa, pb;
    pa.local_mac = side_[0].port->mac();
    pa.peer_mac = side_[1].port->mac();
    pa.local_ip = side_[0].port->ip();
    pa.peer_ip = side_[1].port->ip();
    pa.peer_qpn = c.qb->qpn();
    pb.local_mac = pa.peer_mac;
    pb.peer_mac = pa.local_mac;
    pb.local_ip = pa.peer_ip;
    pb.peer_ip = pa.local_ip;
    pb.peer_qpn = c.qa->qpn();
    EXPECT_TRUE(c.qa->connect(pa, wire::Psn(100), wire::Psn(200)));
    EXPECT_TRUE(c.qb->connect(pb, wire::Psn(200), wire::Psn(100)));
    return c;
  }
  void poll_all() {
    const uint64_t t = clock_ns();
    for (auto& s : side_)
      for (auto& e : s.engines) e->poll(t);
  }
  Side side_[2];
};

struct Mem {
  std::vector<uint8_t> bytes;
  uint32_t lmr = 0;
  uint64_t va() const { return reinterpret_cast<uint64_t>(bytes.data()); }
};

Mem reg(rc::MrTable& mr, size_t n, uint64_t seed) {
  Mem m;
  m.bytes.resize(n);
  std::mt19937 r(static_cast<unsigned>(seed));
  for (auto& b : m.bytes) b = static_cast<uint8_t>(r());
  EXPECT_TRUE(mr.mr_register(1, m.bytes.data(), m.va(), n, rc::priv::kAll, &m.lmr));
  return m;
}

rc::SendWr write_wr(const Mem& src, const Mem& dst) {
  rc::SendWr w;
  w.op = rc::WrOp::kWrite;
  w.num_sge = 1;
  w.sge[0] = rc::Sge{src.lmr, src.va(), src.bytes.size()};
  w.remote_va = dst.va();
  w.rkey = dst.lmr;
  return w;
}

TEST_F(MultiEngine, QueuePairsOnEveryEngineCombinationInline) {
  // (0,0) and (1,1) stay on their queue; (0,1) and (1,0) cross engines on
  // the far side, so every frame of theirs is handed over once.
  const uint16_t pairs[4][2] = {{0, 0}, {1, 1}, {0, 1}, {1, 0}};
  std::vector<Conn> conns;
  std::vector<Mem> srcs, dsts;
  for (int i = 0; i < 4; ++i) {
    conns.push_back(connect(pairs[i][0], pairs[i][1]));
    srcs.push_back(reg(*side_[0].mr, 256 * 1024, static_cast<uint64_t>(i) + 1));
    dsts.push_back(reg(*side_[1].mr, 256 * 1024, 99));
  }
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(conns[static_cast<size_t>(i)].qa->post_send(
                  write_wr(srcs[static_cast<size_t>(i)], dsts[static_cast<size_t>(i)])),
              rc::Qp::PostResult::kOk);
  const uint64_t end = clock_ns() + 10'000'000'000ull;
  size_t done = 0;
  while (done < 4 && clock_ns() < end) {
    poll_all();
    done = 0;
    for (auto& c : conns) done += c.scq->size();
  }
  ASSERT_EQ(done, 4u);
  for (size_t i = 0; i < 4; ++i) {
    rc::Completion c;
    ASSERT_TRUE(conns[i].scq->pop(&c));
    EXPECT_EQ(c.status, rc::WcStatus::kSuccess) << "pair " << i;
    EXPECT_EQ(srcs[i].bytes, dsts[i].bytes) << "pair " << i;
  }
  uint64_t handed = 0, no_qp = 0;
  for (auto& s : side_)
    for (auto& e : s.engines) {
      handed += e->counters().handed_in;
      no_qp += e->counters().rx_no_qp;
    }
  EXPECT_GT(handed, 0u);
  EXPECT_EQ(no_qp, 0u);
  // Each engine sent and received on its own queue, as the per-queue
  // counters (and their telemetry export) show.
  for (auto& s : side_) {
    const auto m = dpdk::port_counters(*s.port);
    EXPECT_EQ(m.at("queues"), kEngines);
    for (uint16_t q = 0; q < kEngines; ++q) {
      EXPECT_GT(s.port->queue_counters(q).rx_packets, 0u) << "queue " << q;
      EXPECT_GT(s.port->queue_counters(q).tx_packets, 0u) << "queue " << q;
      EXPECT_EQ(m.at("q" + std::to_string(q) + "_rx_packets"),
                s.port->queue_counters(q).rx_packets);
    }
  }
}

TEST_F(MultiEngine, OneThreadPerEngine) {
  const uint16_t pairs[4][2] = {{0, 0}, {1, 1}, {0, 1}, {1, 0}};
  std::vector<Conn> conns;
  std::vector<Mem> srcs, dsts, backs;
  for (int i = 0; i < 4; ++i) {
    conns.push_back(connect(pairs[i][0], pairs[i][1]));
    srcs.push_back(reg(*side_[0].mr, 128 * 1024, static_cast<uint64_t>(i) + 7));
    dsts.push_back(reg(*side_[1].mr, 128 * 1024, 5));
    backs.push_back(reg(*side_[0].mr, 128 * 1024, 6));
  }
  rc::RunnerConfig rcfg;
  rcfg.policy = rc::IdlePolicy::kBackoff;
  std::vector<std::unique_ptr<rc::EngineRunner>> runners;
  for (auto& s : side_)
    for (auto& e : s.engines) {
      runners.push_back(std::make_unique<rc::EngineRunner>(*e, rcfg, &clock_ns));
      runners.back()->start();
    }
  // Runner index on side A for engine e is e.
  for (size_t i = 0; i < 4; ++i) {
    rc::EngineRunner& ra = *runners[pairs[i][0]];
    ASSERT_TRUE(ra.post_send(conns[i].qa, write_wr(srcs[i], dsts[i])));
    rc::SendWr r = write_wr(backs[i], dsts[i]);
    r.op = rc::WrOp::kRead;
    ASSERT_TRUE(ra.post_send(conns[i].qa, r));
  }
  const uint64_t end = clock_ns() + 20'000'000'000ull;
  for (size_t i = 0; i < 4; ++i) {
    for (int k = 0; k < 2; ++k) {
      rc::Completion c;
      while (!conns[i].scq->pop(&c)) {
        ASSERT_LT(clock_ns(), end) << "pair " << i;
        std::this_thread::yield();
      }
      EXPECT_EQ(c.status, rc::WcStatus::kSuccess) << "pair " << i;
    }
  }
  for (auto& r : runners) r->stop();
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(srcs[i].bytes, dsts[i].bytes) << "pair " << i;
    EXPECT_EQ(srcs[i].bytes, backs[i].bytes) << "pair " << i;
  }
}

}  // namespace
}  // namespace dpdat
