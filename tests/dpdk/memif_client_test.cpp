// A net_memif client that reaches its server's socket before the server's
// port has started: the server (its socket bound when the device was
// probed, its port not yet started) answers the client's INIT with "ID not
// found" and drops the connection.  Two processes opening their ends at
// once (the two ranks of an MPI job over memif) meet this whenever the
// server is slow between probe and start; DPDK's client never tries again,
// so both links stayed down for good.  Here in one process: the server
// port starts 300 ms after the client's.  Port::open of the client returns
// once the link is up (it reconnects while the server refuses).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "dpdk/eal.hpp"
#include "dpdk/memif_client.hpp"
#include "dpdk/port.hpp"

namespace {

using namespace dpdat;
using Clock = std::chrono::steady_clock;

TEST(MemifClient, ConnectsToAServerThatStartsLater) {
  ASSERT_TRUE(dpdk::eal_init().ok) << dpdk::eal_init().error;
  const std::string sock = "/tmp/dpdat-memif-late-" + std::to_string(getpid()) + ".sock";
  std::string err;
  uint16_t srv = 0, cli = 0;
  ASSERT_TRUE(dpdk::probe_vdev(
      "net_memif_late_s,role=server,id=11,socket-abstract=no,socket=" + sock, &srv, &err))
      << err;
  ASSERT_TRUE(dpdk::probe_vdev(
      "net_memif_late_c,role=client,id=11,socket-abstract=no,socket=" + sock, &cli, &err))
      << err;
  dpdk::PortConfig pc;
  pc.rx_desc = pc.tx_desc = 256;
  std::unique_ptr<dpdk::Port> s;
  std::string serr;
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    dpdk::PortConfig spc = pc;
    spc.name = "mlate_s";
    s = dpdk::Port::open(srv, spc, &serr);
  });
  pc.name = "mlate_c";
  auto c = dpdk::Port::open(cli, pc, &err);
  late.join();
  ASSERT_NE(s, nullptr) << serr;
  ASSERT_NE(c, nullptr) << err;
  const auto end = Clock::now() + std::chrono::seconds(10);
  while (!(s->link_up() && c->link_up()) && Clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(c->link_up()) << "the client's link never came up";
  EXPECT_TRUE(s->link_up()) << "the server's link never came up";
  // The first connection was refused (the server's port had not started):
  // the client made another.
  EXPECT_GE(dpdk::memif_client::reconnects(), 1u);
  c.reset();
  s.reset();
  unlink(sock.c_str());
}

// A client whose socket path no server can ever listen on fails its open at
// once with the reason, instead of waiting kConnectLimitMs for a server: a
// path whose directory went away after the device was probed (the PMD
// checks the directory at probe), and a path that is a regular file.  The
// time bound is generous (the wait it replaces is 20 s); it only tells "at
// once" from "after the wait".
TEST(MemifClient, AnUnusableSocketPathFailsAtOnce) {
  ASSERT_TRUE(dpdk::eal_init().ok) << dpdk::eal_init().error;
  const std::string base = "/tmp/dpdat-memif-bad-" + std::to_string(getpid());
  const std::string file = base + ".file";
  const std::string dir = base + ".dir";
  const int fd = open(file.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  struct Case {
    std::string vdev, path, reason;
  };
  const Case cases[] = {
      {"net_memif_gone_c", dir + "/memif.sock", "No such file or directory"},
      {"net_memif_file_c", file, "is not a socket"},
  };
  int id = 21;
  for (const Case& c : cases) {
    std::string err;
    uint16_t port = 0;
    ASSERT_TRUE(dpdk::probe_vdev(
        c.vdev + ",role=client,id=" + std::to_string(id++) + ",socket-abstract=no,socket=" + c.path,
        &port, &err))
        << err;
    rmdir(dir.c_str());  // after the first probe: its directory is gone
    dpdk::PortConfig pc;
    pc.rx_desc = pc.tx_desc = 256;
    pc.name = c.vdev.substr(4);
    const auto start = Clock::now();
    auto p = dpdk::Port::open(port, pc, &err);
    const auto took = Clock::now() - start;
    EXPECT_EQ(p, nullptr) << c.path;
    EXPECT_NE(err.find(c.path), std::string::npos) << err;
    EXPECT_NE(err.find(c.reason), std::string::npos) << err;
    EXPECT_LT(took, std::chrono::seconds(5)) << c.path << ": " << err;
  }
  unlink(file.c_str());
}

}  // namespace
