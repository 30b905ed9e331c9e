// Both ends of a net_memif link closed at the same moment, as two processes
// do at the end of a run: closing one end makes the other end's EAL
// interrupt thread run memif_disconnect() for its device (the control
// channel saw the peer go) while this process's own thread stops and closes
// that same device.  DPDK 22.11 does not serialise the two (the regions are
// unmapped, the queues' interrupt descriptors closed and the queues freed
// under the interrupt thread's feet); Port closes a memif device on the
// interrupt thread itself, so they cannot overlap.  One process, a server
// and a client port per round, the two closes started together with a
// varying offset.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "dpdk/eal.hpp"
#include "dpdk/port.hpp"

namespace {

using namespace dpdat;

bool wait_up(const dpdk::Port& a, const dpdk::Port& b) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(a.link_up() && b.link_up()) && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return a.link_up() && b.link_up();
}

TEST(MemifTeardown, BothEndsClosingAtOnce) {
  ASSERT_TRUE(dpdk::eal_init().ok) << dpdk::eal_init().error;
  std::mt19937 rng(7);
  constexpr int kRounds = 30;
  for (int r = 0; r < kRounds; ++r) {
    SCOPED_TRACE("round " + std::to_string(r));
    const std::string tag = std::to_string(getpid()) + "_" + std::to_string(r);
    const std::string sock = "/tmp/dpdat-memif-td-" + tag + ".sock";
    std::string err;
    uint16_t srv = 0, cli = 0;
    ASSERT_TRUE(dpdk::probe_vdev("net_memif_td_s" + tag + ",role=server,id=" + std::to_string(r) +
                                     ",socket-abstract=no,socket=" + sock,
                                 &srv, &err))
        << err;
    ASSERT_TRUE(dpdk::probe_vdev("net_memif_td_c" + tag + ",role=client,id=" + std::to_string(r) +
                                     ",socket-abstract=no,socket=" + sock,
                                 &cli, &err))
        << err;
    dpdk::PortConfig pc;
    pc.rx_desc = pc.tx_desc = 256;
    pc.name = "mtd_s" + std::to_string(r);
    auto s = dpdk::Port::open(srv, pc, &err);
    ASSERT_NE(s, nullptr) << err;
    pc.name = "mtd_c" + std::to_string(r);
    auto c = dpdk::Port::open(cli, pc, &err);
    ASSERT_NE(c, nullptr) << err;
    ASSERT_TRUE(wait_up(*s, *c));
    // The client leaves; the server closes as its interrupt thread notices.
    const auto offset = std::chrono::microseconds(rng() % 400);
    std::thread leave([&c] { c.reset(); });
    std::this_thread::sleep_for(offset);
    s.reset();
    leave.join();
    unlink(sock.c_str());
  }
}

}  // namespace
