// dpdat-scale-conn: connection set-up rate through the public uDAPL 1.2 API
// (<dat/udat.h>, libdat), in one process or across two.
//
//   dpdat-scale-conn [--conns N] [--batch B]                  one process:
//       IAs dpdat0 (client) and dpdat1 (server) on the in-process link, one
//       thread answering both sides
//   dpdat-scale-conn --server IA [--conns N]                  two processes:
//   dpdat-scale-conn --client IA SERVER_IP [--conns N] [--batch B]
//
// The client creates an EP per connection and connects them `batch` at a
// time (dat_ep_connect, then every ESTABLISHED); the server creates an EP
// per connection request and accepts it.  Reported: connections per second
// from the first dat_ep_connect to the last ESTABLISHED (client), from the
// first request to the last ESTABLISHED (server).  All connections stay up
// until the end; the IAs close abruptly.  Exit 0, 1 on a DAT failure, 2 on
// bad usage, 3 on a timeout.

#include <arpa/inet.h>
#include <dat/udat.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr DAT_CONN_QUAL kQual = 0x5CA1;
constexpr DAT_COUNT kQlen = 4096;
constexpr DAT_TIMEOUT kWaitUs = 20'000'000;

[[noreturn]] void die(int code, const std::string& why) {
  std::fprintf(stderr, "dpdat-scale-conn: %s\n", why.c_str());
  std::exit(code);
}
void check(DAT_RETURN r, const char* what) {
  if (r != DAT_SUCCESS) {
    const char* major = "?";
    const char* minor = "?";
    (void)dat_strerror(r, &major, &minor);
    die(1, std::string(what) + ": " + major + " " + minor);
  }
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Side {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL, dto = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL,
                 cr = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  std::vector<DAT_EP_HANDLE> eps;
  uint64_t established = 0, disconnected = 0;

  void open(const char* name, bool listen) {
    check(dat_ia_open(const_cast<char*>(name), 16, &async, &ia), "dat_ia_open");
    check(dat_pz_create(ia, &pz), "dat_pz_create");
    check(dat_evd_create(ia, kQlen, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), "dat_evd_create");
    check(dat_evd_create(ia, kQlen, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn),
          "dat_evd_create");
    if (listen) {
      check(dat_evd_create(ia, kQlen, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr), "dat_evd_create");
      check(dat_psp_create(ia, kQual, cr, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create");
    }
  }
  DAT_EP_HANDLE new_ep() {
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    check(dat_ep_create(ia, pz, dto, dto, conn, nullptr, &ep), "dat_ep_create");
    eps.push_back(ep);
    return ep;
  }
  // Takes one event of `evd` (wait: block up to kWaitUs; else poll).  True
  // when one was taken.
  static bool take(DAT_EVD_HANDLE evd, bool wait, DAT_EVENT* ev) {
    if (!wait) return dat_evd_dequeue(evd, ev) == DAT_SUCCESS;
    DAT_COUNT nmore = 0;
    const DAT_RETURN r = dat_evd_wait(evd, kWaitUs, 1, ev, &nmore);
    if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED) die(3, "timed out waiting for an event");
    check(r, "dat_evd_wait");
    return true;
  }
  // Server: answers the connection requests and counts the ESTABLISHED
  // events there are; with `wait`, when there were none, waits up to 1 ms
  // for a request.  True when anything moved.
  bool serve(bool wait) {
    DAT_EVENT ev;
    bool moved = false;
    while (take(cr, false, &ev)) {
      accept(ev);
      moved = true;
    }
    while (take(conn, false, &ev)) {
      if (ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED) {
        ++disconnected;  // the client is closing (it has all its ESTABLISHED)
      } else if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
        die(1, "server: connection event " + std::to_string(ev.event_number));
      } else {
        ++established;
      }
      moved = true;
    }
    if (!moved && wait) {
      DAT_COUNT nmore = 0;
      const DAT_RETURN r = dat_evd_wait(cr, 1000, 1, &ev, &nmore);
      if (r == DAT_SUCCESS) {
        accept(ev);
        moved = true;
      } else if (DAT_GET_TYPE(r) != DAT_TIMEOUT_EXPIRED) {
        check(r, "dat_evd_wait");
      }
    }
    return moved;
  }
  void accept(const DAT_EVENT& ev) {
    if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) die(1, "unexpected CR EVD event");
    check(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, new_ep(), 0, nullptr),
          "dat_cr_accept");
  }
  void close() {
    if (ia != DAT_HANDLE_NULL) check(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
  }
};

// Client: `n` connections to `ip`, `batch` at a time; `peer` (one process)
// is served meanwhile.  Seconds taken.
double run_client(Side& c, const char* ip, uint32_t n, uint32_t batch, Side* peer) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) die(2, std::string("bad address ") + ip);
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t done = 0; done < n;) {
    const uint32_t k = std::min(batch, n - done);
    for (uint32_t i = 0; i < k; ++i)
      check(dat_ep_connect(c.new_ep(), reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sa), kQual, kWaitUs, 0,
                           nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
            "dat_ep_connect");
    const auto tb = std::chrono::steady_clock::now();
    while (c.established < done + k) {
      if (peer != nullptr) peer->serve(false);
      DAT_EVENT ev;
      if (!Side::take(c.conn, peer == nullptr, &ev)) {
        if (since(tb) * 1e6 > kWaitUs) die(3, "timed out waiting for ESTABLISHED");
        continue;
      }
      if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
        die(1, "client: connection event " + std::to_string(ev.event_number));
      ++c.established;
    }
    done += k;
  }
  return since(t0);
}

uint32_t number(std::string_view opt, const char* v) {
  if (v == nullptr) die(2, "missing value for " + std::string(opt));
  char* end = nullptr;
  const unsigned long x = std::strtoul(v, &end, 10);
  if (*v == '\0' || *end != '\0' || x == 0 || x > 65535)
    die(2, "bad value for " + std::string(opt) + ": " + v);
  return static_cast<uint32_t>(x);
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t n = 10'000, batch = 256;
  const char* server_ia = nullptr;
  const char* client_ia = nullptr;
  const char* server_ip = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string_view o = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (o == "--conns") {
      n = number(o, v);
      ++i;
    } else if (o == "--batch") {
      batch = number(o, v);
      ++i;
    } else if (o == "--server" && v != nullptr) {
      server_ia = v;
      ++i;
    } else if (o == "--client" && v != nullptr && i + 2 < argc) {
      client_ia = v;
      server_ip = argv[i + 2];
      i += 2;
    } else if (o == "--help") {
      std::printf(
          "usage: dpdat-scale-conn [--conns N (10000)] [--batch B (256)]\n"
          "       dpdat-scale-conn --server IA [--conns N]\n"
          "       dpdat-scale-conn --client IA SERVER_IP [--conns N] [--batch B]\n");
      return 0;
    } else {
      die(2, "bad argument " + std::string(o) + " (--help)");
    }
  }
  if (server_ia != nullptr && client_ia != nullptr)
    die(2, "--server and --client exclude each other");
  if (server_ia != nullptr) {
    Side s;
    s.open(server_ia, true);
    std::printf("dpdat-scale-conn server: listening, %u connections expected\n", n);
    std::fflush(stdout);
    // The clock starts at the first request; 60 s without one: give up.
    auto last = std::chrono::steady_clock::now();
    while (!s.serve(true))
      if (since(last) > 60) die(3, "no connection request within 60 s");
    const auto t0 = std::chrono::steady_clock::now();
    last = t0;
    while (s.established < n && s.disconnected == 0) {
      if (s.serve(true)) {
        last = std::chrono::steady_clock::now();
      } else if (since(last) * 1e6 > kWaitUs) {
        die(3,
            "timed out waiting for an event (" + std::to_string(s.established) + " established)");
      }
    }
    const double secs = since(t0);
    const auto got = static_cast<double>(s.established);
    std::printf(
        "dpdat-scale-conn server: %.0f connections established in %.3f s = %.0f "
        "connections/s%s\n",
        got, secs, got / secs,
        s.established < n ? " (the client began closing before the last RTU)" : "");
    // Stay until the client closes (its DREQs), at most a few seconds.
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    (void)dat_evd_wait(s.conn, 5'000'000, 1, &ev, &nmore);
    s.close();
    return 0;
  }
  if (client_ia != nullptr) {
    Side c;
    c.open(client_ia, false);
    const double secs = run_client(c, server_ip, n, batch, nullptr);
    std::printf(
        "dpdat-scale-conn client: %u connections in %.3f s = %.0f connections/s "
        "(batches of %u), two processes\n",
        n, secs, n / secs, batch);
    c.close();
    return 0;
  }
  Side s, c;
  s.open("dpdat1", true);
  c.open("dpdat0", false);
  const double secs = run_client(c, "192.168.77.2", n, batch, &s);
  while (s.established < n) s.serve(false);
  std::printf(
      "dpdat-scale-conn: %u connections in %.3f s = %.0f connections/s (batches of %u), "
      "one process\n",
      n, secs, n / secs, batch);
  c.close();
  s.close();
  return 0;
}
