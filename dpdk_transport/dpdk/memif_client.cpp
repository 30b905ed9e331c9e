#include "memif_client.hpp"

#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/tcp.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

namespace dpdat::dpdk::memif_client {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::atomic<uint64_t> g_reconnects{0};

bool link_up(uint16_t port_id) {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(port_id, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

// A devarg of the port's device, or `dflt`.
std::string devarg(uint16_t port_id, const char* key, const char* dflt) {
  std::string v = dflt;
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port_id, &info) != 0) return v;
  const rte_devargs* da = info.device != nullptr ? rte_dev_devargs(info.device) : nullptr;
  if (da == nullptr || da->args == nullptr) return v;
  if (rte_kvargs* kv = rte_kvargs_parse(da->args, nullptr); kv != nullptr) {
    if (const char* s = rte_kvargs_get(kv, key); s != nullptr) v = s;
    rte_kvargs_free(kv);
  }
  return v;
}

// A listening Unix socket as the kernel's socket diagnostics show it.
struct Listener {
  int backlog = -1;  // connections waiting in its accept queue (-1: not reported)
  uint8_t type = 0;  // SOCK_SEQPACKET for a memif server
};

// The listening Unix socket bound at `name` (abstract names start with a
// NUL); nothing when none is found or the diagnostics cannot be read.
std::optional<Listener> find_listener(const std::string& name) {
  const int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return std::nullopt;
  struct {
    nlmsghdr nlh;
    unix_diag_req req;
  } q{};
  q.nlh.nlmsg_len = sizeof(q);
  q.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  q.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  q.req.sdiag_family = AF_UNIX;
  q.req.udiag_states = 1u << TCP_LISTEN;
  q.req.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_RQLEN;
  std::optional<Listener> found;
  auto align4 = [](size_t x) { return (x + 3) & ~size_t{3}; };
  if (send(fd, &q, sizeof(q), 0) == static_cast<ssize_t>(sizeof(q))) {
    std::vector<char> buf(32768);
    bool done = false;
    while (!done) {
      const ssize_t got = recv(fd, buf.data(), buf.size(), 0);
      if (got <= 0) break;
      const size_t n = static_cast<size_t>(got);
      // nlmsghdr, unix_diag_msg, then attributes (a 16-bit length and
      // type, the payload), each 4-byte aligned.
      for (size_t off = 0; off + sizeof(nlmsghdr) <= n;) {
        nlmsghdr h{};
        std::memcpy(&h, buf.data() + off, sizeof(h));
        if (h.nlmsg_len < sizeof(h) || off + h.nlmsg_len > n) {
          done = true;
          break;
        }
        if (h.nlmsg_type == NLMSG_DONE || h.nlmsg_type == NLMSG_ERROR) {
          done = true;
          break;
        }
        const size_t end = off + h.nlmsg_len;
        unix_diag_msg msg{};
        if (h.nlmsg_len >= align4(sizeof(nlmsghdr)) + sizeof(msg))
          std::memcpy(&msg, buf.data() + off + align4(sizeof(nlmsghdr)), sizeof(msg));
        std::string bound;
        int rq = -1;
        for (size_t a = off + align4(sizeof(nlmsghdr)) + align4(sizeof(unix_diag_msg));
             a + 4 <= end;) {
          uint16_t len = 0, type = 0;
          std::memcpy(&len, buf.data() + a, 2);
          std::memcpy(&type, buf.data() + a + 2, 2);
          if (len < 4 || a + len > end) break;
          const char* payload = buf.data() + a + 4;
          const size_t plen = len - 4u;
          if (type == UNIX_DIAG_NAME) bound.assign(payload, plen);
          if (type == UNIX_DIAG_RQLEN && plen >= sizeof(unix_diag_rqlen)) {
            unix_diag_rqlen r{};
            std::memcpy(&r, payload, sizeof(r));
            rq = static_cast<int>(r.udiag_rqueue);
          }
          a += align4(len);
        }
        while (!bound.empty() && bound.back() == '\0' && name.back() != '\0') bound.pop_back();
        if (bound == name) found = Listener{rq, msg.udiag_type};
        off += align4(h.nlmsg_len);
      }
    }
  }
  close(fd);
  return found;
}

// The port's socket path as bound: abstract names (net_memif's default)
// start with a NUL.
std::string socket_name(uint16_t port_id) {
  std::string name = devarg(port_id, "socket", "/run/memif.sock");
  if (devarg(port_id, "socket-abstract", "yes") != "no") name.insert(name.begin(), '\0');
  return name;
}

// Whether the server took our connection off its accept queue.  net_memif's
// server, on taking a connection, sends its HELLO at once, and when that
// send fails (the client closed meanwhile) it closes the socket without
// unregistering its interrupt callback: the EAL interrupt thread then
// panics ("Error adding fd ... epoll_ctl").  So the client never closes a
// connection the server has not taken yet.
bool server_took_it(uint16_t port_id) {
  // None waiting, or no server listening there (that can take nothing).
  const auto l = find_listener(socket_name(port_id));
  return !l || l->backlog <= 0;
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

std::string start_failure(uint16_t port_id) {
  const std::string name = socket_name(port_id);
  const bool abstract = !name.empty() && name.front() == '\0';
  const std::string shown = abstract ? "@" + name.substr(1) : name;
  const std::string what = "net_memif client: cannot connect to " + shown + ": ";
  const auto l = find_listener(name);
  // A listener of another kind is no memif server (the PMD connects with
  // SOCK_SEQPACKET).  A memif server there now (it may have come up since
  // the start failed) is tried again.
  if (l && l->type != SOCK_SEQPACKET) return what + "the socket listening there is no memif server";
  if (abstract) return "";  // no file to look at: a listener is absent or back
  struct stat st {};
  if (stat(name.c_str(), &st) != 0) {
    const int e = errno;
    if (e != ENOENT) return what + std::strerror(e);
    // Absent: the server makes it, in a directory that must exist already.
    const size_t slash = name.find_last_of('/');
    const std::string dir =
        slash == std::string::npos ? "." : (slash == 0 ? "/" : name.substr(0, slash));
    struct stat ds {};
    if (stat(dir.c_str(), &ds) != 0) return what + "directory " + dir + ": " + std::strerror(errno);
    if (!S_ISDIR(ds.st_mode)) return what + dir + " is not a directory";
    return "";
  }
  if (!S_ISSOCK(st.st_mode)) return what + "the path exists and is not a socket";
  // Connecting needs write permission on the socket file.
  if (access(name.c_str(), W_OK) != 0) return what + std::strerror(errno);
  return "";  // a socket nobody listens on yet, or a server that just came up
}

bool await_link(uint16_t port_id, uint64_t limit_ms, std::string* err) {
  const auto start = Clock::now();
  const auto deadline = start + milliseconds(limit_ms);
  auto try_for = milliseconds(250);
  uint32_t tries = 1;
  int last_rc = 0;
  for (;;) {
    if (up_by(port_id, std::min(Clock::now() + try_for, deadline))) return true;
    if (Clock::now() >= deadline) break;
    // Not up after try_for: the server refused or dropped this connection,
    // or has not got to it yet.  Only a connection the server took is
    // closed (server_took_it), and only after it was seen taken twice
    // 50 ms apart (the server sends its HELLO right after taking it).
    if (!server_took_it(port_id)) continue;
    std::this_thread::sleep_for(milliseconds(50));
    if (!server_took_it(port_id) || link_up(port_id)) continue;
    // A fresh connection: stopping closes the control channel the PMD may
    // still hold, starting connects to the socket again (and fails while
    // the socket is gone: then again after the next try).
    (void)rte_eth_dev_stop(port_id);
    last_rc = rte_eth_dev_start(port_id);
    ++tries;
    g_reconnects.fetch_add(1, std::memory_order_relaxed);
    if (last_rc != 0) {
      if (std::string why = start_failure(port_id); !why.empty()) {
        *err = why;
        return false;
      }
    }
    try_for = std::min(try_for * 2, milliseconds(2000));
  }
  *err = "net_memif client: its link did not come up within " + std::to_string(limit_ms) + " ms (" +
         std::to_string(tries) + " connections to the server" +
         (last_rc != 0 ? std::string(", the last refused: ") + rte_strerror(-last_rc) : "") + ")";
  return false;
}

uint64_t reconnects() { return g_reconnects.load(std::memory_order_relaxed); }

}  // namespace dpdat::dpdk::memif_client
