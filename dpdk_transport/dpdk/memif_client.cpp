#include "memif_client.hpp"

#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace dpdat::dpdk::memif_client {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::atomic<uint64_t> g_reconnects{0};

bool link_up(uint16_t port_id) {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(port_id, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

// Polls the link until `until`; true once it is up.
bool up_by(uint16_t port_id, Clock::time_point until) {
  for (;;) {
    if (link_up(port_id)) return true;
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
}

}  // namespace

bool is_client(uint16_t port_id) {
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port_id, &info) != 0 || info.driver_name == nullptr ||
      std::strcmp(info.driver_name, "net_memif") != 0)
    return false;
  const rte_devargs* da = info.device != nullptr ? rte_dev_devargs(info.device) : nullptr;
  bool client = true;  // net_memif's default role
  if (da != nullptr && da->args != nullptr) {
    if (rte_kvargs* kv = rte_kvargs_parse(da->args, nullptr); kv != nullptr) {
      // As the PMD reads it: "server" (or the old "master") anywhere in it.
      if (const char* r = rte_kvargs_get(kv, "role"); r != nullptr)
        client = std::strstr(r, "server") == nullptr && std::strstr(r, "master") == nullptr;
      rte_kvargs_free(kv);
    }
  }
  return client;
}

bool await_link(uint16_t port_id, uint64_t limit_ms, std::string* err) {
  const auto start = Clock::now();
  const auto deadline = start + milliseconds(limit_ms);
  auto try_for = milliseconds(100);
  uint32_t tries = 1;
  int last_rc = 0;
  for (;;) {
    if (up_by(port_id, std::min(Clock::now() + try_for, deadline))) return true;
    if (Clock::now() >= deadline) break;
    // The server refused or dropped this connection (or it is still on its
    // way after try_for): a fresh one.  Stopping closes the control channel
    // the PMD may still hold; starting connects to the socket again (and
    // fails while the socket is gone: then again after the next try).
    (void)rte_eth_dev_stop(port_id);
    last_rc = rte_eth_dev_start(port_id);
    ++tries;
    g_reconnects.fetch_add(1, std::memory_order_relaxed);
    try_for = std::min(try_for * 2, milliseconds(2000));
  }
  *err = "net_memif client: its link did not come up within " + std::to_string(limit_ms) +
         " ms (" + std::to_string(tries) + " connections to the server" +
         (last_rc != 0 ? std::string(", the last refused: ") + rte_strerror(-last_rc) : "") + ")";
  return false;
}

uint64_t reconnects() { return g_reconnects.load(std::memory_order_relaxed); }

}  // namespace dpdat::dpdk::memif_client
