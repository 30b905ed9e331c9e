// dat_core's link seam over DPDK (link_dpdk/link_factory): linking the object
// library installs the factory; ring=0 / ring=1 open the two ends of the
// in-process net_ring link; neighbour resolution runs ARP over it; a port
// name nobody has is kNotFound; the clock reads the TSC once the EAL runs
// and stays with steady_clock.  Its own process (one EAL).

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "config.hpp"
#include "link.hpp"
#include "link_dpdk/link_factory.hpp"

namespace dpdat {
namespace {

dat::IfaceConfig config(const std::string& name, const std::string& text) {
  dat::IfaceConfig c;
  c.name = name;
  std::string err;
  EXPECT_TRUE(dat::parse_iface_config(text, &c, &err)) << err;
  return c;
}

TEST(DpdkLinkFactory, InstalledByLinking) {
  EXPECT_EQ(dat::link_factory(), &dpdk::link_factory());
  EXPECT_STREQ(dat::link_factory()->name, "dpdk");
}

TEST(DpdkLinkFactory, RingEndsResolveEachOtherByArp) {
  const dat::LinkFactory& f = dpdk::link_factory();
  dat::LinkError err = dat::LinkError::kNone;
  std::string why;
  auto a = f.open(config("lfa", "ring=0;ip=192.168.79.1"), &err, &why);
  ASSERT_NE(a, nullptr) << why;
  auto b = f.open(config("lfb", "ring=1;ip=192.168.79.2"), &err, &why);
  ASSERT_NE(b, nullptr) << why;
  EXPECT_EQ(err, dat::LinkError::kNone);
  EXPECT_EQ(a->ip(), 0xC0A84F01u);
  // (net_ring ports report the all-zero MAC at both ends.)
  EXPECT_EQ(a->max_pmtu(), 1024u);  // MTU 1500
  EXPECT_FALSE(a->rx_wakeups());
  // Miss: an ARP request goes out; b answers it below its engine, a learns
  // the reply on its next receive burst.
  wire::MacAddr mac{};
  bool resolved = a->resolve(0xC0A84F02u, &mac);
  EXPECT_FALSE(resolved);
  rc::Frame fr[8];
  for (int i = 0; i < 1000 && !resolved; ++i) {
    uint16_t n = b->io().rx_burst(fr, 8);  // ARP is consumed, never returned
    if (n > 0) b->io().rx_release(fr, n);
    n = a->io().rx_burst(fr, 8);
    if (n > 0) a->io().rx_release(fr, n);
    resolved = a->resolve(0xC0A84F02u, &mac);
  }
  ASSERT_TRUE(resolved);
  EXPECT_EQ(mac, b->mac());
}

TEST(DpdkLinkFactory, UnknownPortIsNotFound) {
  dat::LinkError err = dat::LinkError::kNone;
  std::string why;
  EXPECT_EQ(
      dpdk::link_factory().open(config("lfx", "port=no_such_port;ip=192.168.79.9"), &err, &why),
      nullptr);
  EXPECT_EQ(err, dat::LinkError::kNotFound);
  EXPECT_NE(why.find("no_such_port"), std::string::npos) << why;
}

// Runs after a link opened the EAL: the TSC clock, anchored to steady_clock.
TEST(DpdkLinkFactory, ClockFollowsSteadyClock) {
  const dat::LinkFactory& f = dpdk::link_factory();
  const uint64_t s0 = dat::steady_now_ns();
  const uint64_t t0 = f.now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint64_t t1 = f.now_ns();
  const uint64_t s1 = dat::steady_now_ns();
  EXPECT_GE(t1 - t0, 15'000'000u);
  // Within 2 ms of steady_clock over the same interval (drift, preemption).
  const int64_t skew = static_cast<int64_t>(t1 - t0) - static_cast<int64_t>(s1 - s0);
  EXPECT_LT(skew < 0 ? -skew : skew, 2'000'000);
  EXPECT_GE(dat::now_ns(), t1);  // dat_core's clock is the factory's
}

}  // namespace
}  // namespace dpdat
