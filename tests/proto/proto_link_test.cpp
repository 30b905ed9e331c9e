// The simulated link's side of dat_core's seam (link.hpp), opened through
// its factory: which configurations open, neighbour resolution, the RX wait
// and wake-up, and receive loss from loss=.  These run before any interface
// of this process holds an end (each test is its own process under ctest;
// a test that finds an end taken skips).

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "ops_qp_attr.hpp"  // ia_link_events, ia_link_info
#include "proto_fixture.hpp"

namespace dpdat::proto {
namespace {

struct Ends {
  std::unique_ptr<Link> a, b;
};

// Opens ring=0 and ring=1 through the factory; false if this process's
// interfaces hold them already.
bool open_ends(Ends* e, const std::string& extra_a = "", const std::string& extra_b = "") {
  install_sim_link(0x5EED);
  const LinkFactory& f = sim_link_factory();
  LinkError err = LinkError::kNone;
  std::string why;
  e->a = f.open(config("la", "ring=0;ip=10.9.0.1" + extra_a), &err, &why);
  if (!e->a) return false;
  e->b = f.open(config("lb", "ring=1;ip=10.9.0.2;mtu=9000" + extra_b), &err, &why);
  return e->b != nullptr;
}

// Sends one 64-byte frame from `l`.
void send_frame(Link& l, uint8_t tag) {
  rc::Frame fr;
  ASSERT_EQ(l.io().tx_alloc(&fr, 1, 64), 1);
  std::memset(fr.data, tag, 64);
  fr.len = 64;
  ASSERT_EQ(l.io().tx_burst(&fr, 1), 1);
}

uint64_t ms_since(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t)
          .count());
}

TEST(ProtoLink, OpensOnlyTheTwoEndsOnce) {
  Ends e;
  if (!open_ends(&e)) GTEST_SKIP() << "the ends are held by this process's interfaces";
  const LinkFactory& f = sim_link_factory();
  LinkError err = LinkError::kNone;
  std::string why;
  EXPECT_EQ(f.open(config("lc", "ring=0;ip=10.9.0.3"), &err, &why), nullptr);
  EXPECT_EQ(err, LinkError::kDevice) << why;
  EXPECT_EQ(f.open(config("ld", "vdev=net_null0;ip=10.9.0.4"), &err, &why), nullptr);
  EXPECT_EQ(err, LinkError::kNotFound) << why;
  EXPECT_EQ(e.a->ip(), kIpA);
  EXPECT_NE(e.a->mac(), e.b->mac());
  EXPECT_EQ(e.a->max_pmtu(), 1024u);  // MTU 1500
  EXPECT_EQ(e.b->max_pmtu(), 4096u);  // MTU 9000
  e.a.reset();                        // closing an end frees it for the next open
  e.a = f.open(config("la", "ring=0;ip=10.9.0.1"), &err, &why);
  EXPECT_NE(e.a, nullptr) << why;
}

TEST(ProtoLink, ResolvesLikeArp) {
  Ends e;
  if (!open_ends(&e)) GTEST_SKIP() << "the ends are held by this process's interfaces";
  wire::MacAddr mac{};
  EXPECT_FALSE(e.a->resolve(kIpB, &mac));  // the request goes out
  ASSERT_TRUE(e.a->resolve(kIpB, &mac));   // the answer came back
  EXPECT_EQ(mac, e.b->mac());
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(e.a->resolve(0x0A0900FE, &mac));  // nobody's
  const wire::MacAddr fixed{0x02, 1, 2, 3, 4, 5};
  e.a->add_neighbor(0x0A0900FE, fixed);
  ASSERT_TRUE(e.a->resolve(0x0A0900FE, &mac));
  EXPECT_EQ(mac, fixed);
}

TEST(ProtoLink, WaitRxWakesOnTrafficAndOnWake) {
  Ends e;
  if (!open_ends(&e)) GTEST_SKIP() << "the ends are held by this process's interfaces";
  ASSERT_TRUE(e.b->rx_wakeups());
  // Nothing sent: the wait lasts its timeout.
  auto t = std::chrono::steady_clock::now();
  e.b->wait_rx(30'000'000);
  EXPECT_GE(ms_since(t), 25u);
  // A frame already waiting: no sleep.
  send_frame(*e.a, 0xAB);
  t = std::chrono::steady_clock::now();
  e.b->wait_rx(5'000'000'000);
  EXPECT_LT(ms_since(t), 1000u);
  rc::Frame fr;
  ASSERT_EQ(e.b->io().rx_burst(&fr, 1), 1);
  EXPECT_EQ(fr.len, 64u);
  EXPECT_EQ(fr.data[0], 0xAB);
  e.b->io().rx_release(&fr, 1);
  // A frame sent while b sleeps, and a wake() from another thread.
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    send_frame(*e.a, 0xCD);
  });
  t = std::chrono::steady_clock::now();
  e.b->wait_rx(5'000'000'000);
  EXPECT_LT(ms_since(t), 1000u);
  sender.join();
  ASSERT_EQ(e.b->io().rx_burst(&fr, 1), 1);
  e.b->io().rx_release(&fr, 1);
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    e.b->wake();
  });
  t = std::chrono::steady_clock::now();
  e.b->wait_rx(5'000'000'000);
  EXPECT_LT(ms_since(t), 1000u);
  waker.join();
}

TEST(ProtoLink, LossFromConfigDropsReceivedFrames) {
  Ends e;
  if (!open_ends(&e, "", ";loss=0.5")) GTEST_SKIP() << "the ends are held by this process";
  int got = 0;
  for (int i = 0; i < 200; ++i) {
    send_frame(*e.a, 1);
    rc::Frame fr;
    if (e.b->io().rx_burst(&fr, 1) == 1) {
      ++got;
      e.b->io().rx_release(&fr, 1);
    }
  }
  EXPECT_GT(got, 50);  // 100 expected
  EXPECT_LT(got, 150);
  send_frame(*e.b, 2);  // the other direction is clean
  rc::Frame fr;
  ASSERT_EQ(e.a->io().rx_burst(&fr, 1), 1);
  e.a->io().rx_release(&fr, 1);
}

// pmtu= names a path MTU the link must carry: dat_ia_open refuses one above
// what the link's MTU allows (INVALID_PARAMETER, the reason on stderr)
// instead of lowering it; without pmtu= the interface takes the largest.
TEST(ProtoLink, PmtuTheLinkCannotCarryIsRefused) {
  install_sim_link(0x5EED);
  Ia* ia = nullptr;
  const IfaceConfig big = config("pmtu_big", "ring=0;ip=10.9.0.1;pmtu=4096");  // MTU 1500
  ASSERT_TRUE(big.pmtu_given);
  testing::internal::CaptureStderr();
  const Status st = ia_open(big, 16, nullptr, nullptr, &ia);
  const std::string said = testing::internal::GetCapturedStderr();
  if (!st.ok() && st.sub == Sub::RESOURCE_DEVICE) GTEST_SKIP() << "ring=0 held by this process";
  EXPECT_EQ(st.type, Type::INVALID_PARAMETER);
  EXPECT_EQ(st.sub, Sub::INVALID_ARG1);
  EXPECT_NE(said.find("pmtu=4096: the link carries at most PMTU 1024"), std::string::npos) << said;
  // The refused open left the end free: it opens at a PMTU it carries
  // (interfaces live for the process, so each end opens once more only).
  const IfaceConfig jumbo = config("pmtu_jumbo", "ring=0;ip=10.9.0.1;mtu=9000;pmtu=4096");
  ASSERT_TRUE(ia_open(jumbo, 16, nullptr, nullptr, &ia).ok());
  EXPECT_EQ(ia->iface->pmtu, 4096u);
  EXPECT_TRUE(ia_close(ia, false).ok());
  const IfaceConfig dflt = config("pmtu_default", "ring=1;ip=10.9.0.2");
  ASSERT_FALSE(dflt.pmtu_given);
  ASSERT_TRUE(ia_open(dflt, 16, nullptr, nullptr, &ia).ok());
  EXPECT_EQ(ia->iface->pmtu, 1024u);  // the largest MTU 1500 allows
  EXPECT_TRUE(ia_close(ia, false).ok());
}

// The link's state as an IA that asked sees it (ia_link_events): an event
// on its async EVD for each change, with the IA as handle, and ia_link_info
// telling the state now.  An IA that did not ask is told nothing.
TEST_F(ProtoTest, LinkChangesReachTheIasThatAsked) {
  open_both();
  ASSERT_TRUE(ia_link_events(a_.ia, true).ok());
  IaLinkInfo li;
  ASSERT_TRUE(ia_link_info(a_.ia, &li).ok());
  EXPECT_TRUE(li.up);
  wire_->set_link_up(0, false);
  ASSERT_TRUE(ia_link_info(a_.ia, &li).ok());
  EXPECT_FALSE(li.up);
  Event ev = next_event(a_.ia->async_evd, 2'000'000);
  EXPECT_EQ(ev.num, EventNum::kProviderInternal);
  EXPECT_EQ(ev.reason, kLinkDownReason);
  EXPECT_EQ(ev.handle, a_.ia);
  wire_->set_link_up(0, true);
  ev = next_event(a_.ia->async_evd, 2'000'000);
  EXPECT_EQ(ev.num, EventNum::kProviderInternal);
  EXPECT_EQ(ev.reason, kLinkUpReason);
  // b never asked: three polls of its link pass without an event.
  wire_->set_link_up(1, false);
  Event none;
  EXPECT_FALSE(evd_wait(b_.ia->async_evd, 300'000, 1, &none, nullptr).ok());
  ASSERT_TRUE(ia_link_info(b_.ia, &li).ok());
  EXPECT_FALSE(li.up);
}

}  // namespace
}  // namespace dpdat::proto
