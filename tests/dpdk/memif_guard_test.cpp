// net_memif's munmap waits for a thread inside a memif burst (memif_guard):
// one process, a memif server and client port on one socket; the client
// port is closed (memif_disconnect, which unmaps the shared regions) while
// another thread holds a burst mark.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "dpdk/eal.hpp"
#include "dpdk/memif_guard.hpp"
#include "dpdk/port.hpp"

namespace {

using namespace dpdat;
namespace mg = dpdat::dpdk::memif_guard;

TEST(MemifGuard, RegionUnmapWaitsForABurstInProgress) {
  ASSERT_TRUE(dpdk::eal_init().ok) << dpdk::eal_init().error;
  const std::string sock = "/tmp/dpdat-memif-guard-" + std::to_string(getpid()) + ".sock";
  std::string err;
  uint16_t srv = 0, cli = 0;
  ASSERT_TRUE(dpdk::probe_vdev(
      "net_memif_guard_s,role=server,id=7,socket-abstract=no,socket=" + sock, &srv, &err))
      << err;
  ASSERT_TRUE(dpdk::probe_vdev(
      "net_memif_guard_c,role=client,id=7,socket-abstract=no,socket=" + sock, &cli, &err))
      << err;
  dpdk::PortConfig pc;
  pc.rx_desc = pc.tx_desc = 256;
  pc.name = "mguard_s";
  auto s = dpdk::Port::open(srv, pc, &err);
  ASSERT_NE(s, nullptr) << err;
  pc.name = "mguard_c";
  auto c = dpdk::Port::open(cli, pc, &err);
  ASSERT_NE(c, nullptr) << err;
  ASSERT_TRUE(mg::installed()) << "net_memif's munmap was not hooked";
  // Connected: both links up (the handshake runs on the EAL interrupt thread).
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(s->link_up() && c->link_up()) && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(s->link_up() && c->link_up());

  // A "data-path thread" inside a burst for 150 ms.
  mg::Slot* slot = mg::acquire_slot();
  ASSERT_NE(slot, nullptr);
  std::atomic<bool> inside{false};
  std::atomic<int64_t> left_at{0};
  std::thread dp([&] {
    mg::Burst b(slot);
    inside = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    left_at = std::chrono::steady_clock::now().time_since_epoch().count();
  });
  while (!inside) std::this_thread::yield();
  const uint64_t waits_before = mg::waits();
  c.reset();  // stop + close: memif_disconnect unmaps the regions
  const int64_t closed_at = std::chrono::steady_clock::now().time_since_epoch().count();
  dp.join();
  mg::release_slot(slot);
  EXPECT_GT(mg::waits(), waits_before);
  // The unmap (and so the close) returned only after the burst ended.
  EXPECT_GE(closed_at, left_at.load());
  // The server learns of the client's going on the EAL interrupt thread;
  // closing it before that handling is over frees what the handler still
  // uses (the interrupt thread crashed in about 1 run in 3 under CPU load).
  const auto down_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (s->link_up() && std::chrono::steady_clock::now() < down_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(s->link_up()) << "the server never saw the client go";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  s.reset();
  unlink(sock.c_str());
}

}  // namespace
