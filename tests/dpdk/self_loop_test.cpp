// The port's software loopback: frames to the port's own MAC never reach the
// PMD but come back on the same queue's next rx_burst, in order; the loop ring
// is bounded (a full ring ends the burst, counted, the frames stay the
// caller's); frames to another MAC still go to the wire; resolve() of the
// port's own address answers its own MAC without an ARP request.  On its own
// pair of net_ring ports (the peer port B shows what reached the wire).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dpdk/eal.hpp"
#include "dpdk/port.hpp"

namespace dpdat {
namespace {

constexpr uint32_t kIpA = 0x0A500001, kIpB = 0x0A500002;  // 10.80.0.1 / .2
constexpr uint32_t kLen = 128;

class SelfLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& eal = dpdk::eal_init();
    ASSERT_TRUE(eal.ok) << eal.error;
    std::string err;
    uint16_t a = 0, b = 0;
    static int made = 0;  // names stay taken for the process
    const std::string name = "selfloop" + std::to_string(made++);
    ASSERT_TRUE(dpdk::Port::make_ring_link(name, &a, &b, &err)) << err;
    dpdk::PortConfig ca, cb;
    ca.name = name + "a";
    ca.ip = kIpA;
    cb.name = name + "b";
    cb.ip = kIpB;
    a_ = dpdk::Port::open(a, ca, &err);
    ASSERT_TRUE(a_) << err;
    b_ = dpdk::Port::open(b, cb, &err);
    ASSERT_TRUE(b_) << err;
  }

  // One frame to `dst`, its payload tagged with `tag`.
  rc::Frame frame(const wire::MacAddr& dst, uint32_t tag) {
    rc::Frame f;
    EXPECT_EQ(a_->tx_alloc(&f, 1, kLen), 1);
    auto* eth = reinterpret_cast<wire::EthHdr*>(f.data);
    eth->dst = dst;
    eth->src = a_->mac();
    eth->ether_type = wire::Be16(wire::kEtherTypeIpv4);
    std::memset(f.data + sizeof(wire::EthHdr), 0, kLen - sizeof(wire::EthHdr));
    std::memcpy(f.data + kLen - sizeof tag, &tag, sizeof tag);
    f.len = kLen;
    return f;
  }
  static uint32_t tag_of(const rc::Frame& f) {
    uint32_t t = 0;
    std::memcpy(&t, f.data + f.len - sizeof t, sizeof t);
    return t;
  }
  // Everything port p receives now (several bursts).
  static std::vector<uint32_t> drain(dpdk::Port& p) {
    std::vector<uint32_t> tags;
    rc::Frame in[64];
    for (int i = 0; i < 100; ++i) {
      const uint16_t n = p.rx_burst(in, 64);
      for (uint16_t k = 0; k < n; ++k) tags.push_back(tag_of(in[k]));
      p.rx_release(in, n);
    }
    return tags;
  }

  std::unique_ptr<dpdk::Port> a_, b_;
};

TEST_F(SelfLoop, OwnAddressResolvesWithoutArp) {
  EXPECT_NE(a_->mac(), b_->mac());  // net_ring ports get distinct addresses
  wire::MacAddr mac{};
  ASSERT_TRUE(a_->resolve(kIpA, &mac));
  EXPECT_EQ(mac, a_->mac());
  EXPECT_EQ(a_->counters().tx_arp, 0u);
}

TEST_F(SelfLoop, MixedBurstSplitsInOrderAndWireIsUntouched) {
  const wire::MacAddr own = a_->mac(), other = b_->mac();
  rc::Frame f[5] = {frame(own, 1), frame(other, 2), frame(own, 3), frame(own, 4), frame(other, 5)};
  ASSERT_EQ(a_->tx_burst(f, 5), 5);
  const auto c = a_->counters();
  EXPECT_EQ(c.tx_looped, 3u);
  EXPECT_EQ(c.tx_packets, 2u);  // the wire only
  EXPECT_EQ(drain(*a_), (std::vector<uint32_t>{1, 3, 4}));
  EXPECT_EQ(a_->counters().rx_looped, 3u);
  EXPECT_EQ(a_->counters().rx_packets, 0u);
  EXPECT_EQ(drain(*b_), (std::vector<uint32_t>{2, 5}));
}

TEST_F(SelfLoop, FullRingEndsTheBurstAndNothingIsLost) {
  const wire::MacAddr own = a_->mac();
  const unsigned free_before = a_->pool_available();
  uint32_t next = 0, taken = 0;
  bool refused = false;
  // Fill the loop ring without receiving: bursts of 64 until one is cut short.
  for (int round = 0; round < 64 && !refused; ++round) {
    rc::Frame f[64];
    for (auto& x : f) x = frame(own, next++);
    const uint16_t n = a_->tx_burst(f, 64);
    taken += n;
    if (n < 64) {
      refused = true;
      a_->tx_free(f + n, static_cast<uint16_t>(64 - n));  // still ours: the caller frees
    }
  }
  ASSERT_TRUE(refused) << "the loop ring never filled";
  EXPECT_GT(taken, 0u);
  EXPECT_EQ(a_->counters().loop_full, 1u);
  EXPECT_EQ(a_->counters().tx_looped, taken);
  // Everything taken comes back, in order.
  const std::vector<uint32_t> got = drain(*a_);
  ASSERT_EQ(got.size(), taken);
  for (uint32_t i = 0; i < taken; ++i) ASSERT_EQ(got[i], i);
  EXPECT_EQ(a_->counters().rx_looped, taken);
  EXPECT_EQ(a_->pool_available(), free_before);  // every mbuf back in the pool
  // And the ring takes frames again.
  rc::Frame g = frame(own, 7);
  ASSERT_EQ(a_->tx_burst(&g, 1), 1);
  EXPECT_EQ(drain(*a_), std::vector<uint32_t>{7});
}

}  // namespace
}  // namespace dpdat
