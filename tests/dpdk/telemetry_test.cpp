// dpdat's counters through DPDK telemetry: the /dpdat/ commands answer over
// the telemetry socket with the same numbers the function calls return.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>

#include "dpdk/eal.hpp"
#include "dpdk/loopback.hpp"
#include "dpdk/telemetry.hpp"

namespace dpdat {
namespace {

std::string query(const std::string& path, const std::string& cmd) {
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  if (fd < 0) return "";
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  std::string out;
  char buf[16384];
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    (void)read(fd, buf, sizeof buf);  // the greeting
    if (write(fd, cmd.data(), cmd.size()) == static_cast<ssize_t>(cmd.size())) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) out.assign(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return out;
}

TEST(Telemetry, CountersOverTheSocket) {
  const auto& eal = dpdk::eal_init();
  ASSERT_TRUE(eal.ok);
  dpdk::Loopback lo;
  std::string err;
  ASSERT_TRUE(lo.open(rc::QpConfig{}, &err)) << err;
  // Some traffic, so the counters are not all zero.
  std::vector<uint8_t> a(4096, 1), b(4096);
  uint32_t la = 0, lb = 0;
  ASSERT_TRUE(lo.a().mr->mr_register(1, a.data(), reinterpret_cast<uint64_t>(a.data()), a.size(),
                                     rc::priv::kAll, &la));
  ASSERT_TRUE(lo.b().mr->mr_register(1, b.data(), reinterpret_cast<uint64_t>(b.data()), b.size(),
                                     rc::priv::kAll, &lb));
  rc::SendWr w;
  w.op = rc::WrOp::kWrite;
  w.num_sge = 1;
  w.sge[0] = rc::Sge{la, reinterpret_cast<uint64_t>(a.data()), a.size()};
  w.remote_va = reinterpret_cast<uint64_t>(b.data());
  w.rkey = lb;
  ASSERT_EQ(lo.a().qp->post_send(w), rc::Qp::PostResult::kOk);
  ASSERT_TRUE(lo.run_until([&] { return lo.a().scq->size() == 1; }));

  const auto pc = dpdk::port_counters(*lo.a().port);
  EXPECT_GT(pc.at("tx_packets"), 0u);
  const auto ec = dpdk::engine_counters(*lo.a().engine);
  EXPECT_EQ(ec.at("qps"), 1u);
  EXPECT_GT(ec.at("qp_tx_packets"), 0u);
  // Congestion control: nothing marks on this link, so no CNP either way.
  EXPECT_EQ(ec.at("qp_cnp_tx") + ec.at("qp_cnp_rx") + ec.at("qp_ce_rx"), 0u);
  EXPECT_EQ(ec.count("qp_cc_min_rate_bps"), 1u);

  // The telemetry socket of this process.
  std::string prefix;
  for (size_t i = 0; i + 1 < eal.args.size(); ++i)
    if (eal.args[i] == "--file-prefix") prefix = eal.args[i + 1];
  ASSERT_FALSE(prefix.empty()) << "DPDAT_EAL_ARGS without --file-prefix: cannot find the socket";
  const std::string sock = "/var/run/dpdk/" + prefix + "/dpdk_telemetry.v2";
  const std::string ports = query(sock, "/dpdat/ports");
  ASSERT_NE(ports.find("/dpdat/ports"), std::string::npos) << "reply: " << ports;
  const std::string one = query(sock, "/dpdat/port," + std::to_string(lo.a().port->port_id()));
  EXPECT_NE(one.find("\"tx_packets\":" + std::to_string(pc.at("tx_packets"))), std::string::npos)
      << one;
  const std::string eng = query(sock, "/dpdat/engine," + lo.a().name);
  EXPECT_NE(eng.find("\"qps\":1"), std::string::npos) << eng;
  EXPECT_NE(query(sock, "/dpdat/engines").find(lo.a().name), std::string::npos);
}

}  // namespace
}  // namespace dpdat
