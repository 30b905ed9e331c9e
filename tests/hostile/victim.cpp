// The two honest sides of the hostile-peer test (tests/hostile/hostile.sh),
// on the public uDAPL 1.2 API:
//   victim --serve IA --seconds S [--stop FILE]
//     accepts every connection (up to --max-conns live ones; more are
//     rejected), gives each its own 64 KiB region, registered for remote
//     read and write (the 1.2 API has no atomic privilege), between two
//     4 KiB canary areas that no grant covers, and names the region in the
//     REP private data (va, rkey, length): what an application serving
//     clients hands each client.  When a connection ends (disconnect, or
//     broken by an attack) its canaries are checked and its objects freed;
//     at the end all remaining ones are.  Its engine counters are read from
//     its DPDK telemetry socket (by the script while it runs, and by itself
//     before it exits, printed with its own counts as one JSON line
//     "victim-json: {...}").  Exit 0: canaries intact; 5: one changed.
//   victim --honest IA --server IP --seconds S [--stop FILE] [--reconnect-every N]
//     connects, then until S seconds passed (or FILE exists) writes a
//     pattern of varying length into its region with RDMA WRITE, reads it
//     back with RDMA READ and compares byte for byte; with --reconnect-every
//     it disconnects and connects again after every N transfers.  Exit 0
//     when every transfer verified.
// Exit 2: bad command line; 3: DAT error; 4: connection lost.

#include <arpa/inet.h>
#include <dat/udat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "telemetry_client.hpp"

namespace {

constexpr DAT_CONN_QUAL kQual = 4791;
constexpr size_t kCanary = 4096, kRegion = 65536;
constexpr uint8_t kCanaryByte = 0xC5;
constexpr char kHonestPdata[] = "hostile-test honest peer";

[[noreturn]] void die(int code, const std::string& what) {
  std::fprintf(stderr, "victim: %s\n", what.c_str());
  std::exit(code);
}

void check(DAT_RETURN r, const char* what) {
  if (r == DAT_SUCCESS) return;
  const char *mj = "?", *mn = "?";
  dat_strerror(r, &mj, &mn);
  die(3, std::string(what) + ": " + mj + " " + mn);
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Region {
  uint64_t va;
  uint32_t rkey, len;
};

struct Conn {
  std::vector<uint8_t> mem;  // canary | region | canary
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  bool established = false;
  bool canaries_ok() const {
    for (size_t i = 0; i < kCanary; ++i)
      if (mem[i] != kCanaryByte || mem[kCanary + kRegion + i] != kCanaryByte) return false;
    return true;
  }
};

struct Ia {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL, dto = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  explicit Ia(const std::string& name) {
    check(dat_ia_open(const_cast<DAT_NAME_PTR>(name.c_str()), 8, &async, &ia), "dat_ia_open");
    check(dat_pz_create(ia, &pz), "dat_pz_create");
    check(dat_evd_create(ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), "dat_evd_create dto");
    check(dat_evd_create(ia, 256, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn),
          "dat_evd_create conn");
  }
};

nlohmann::json engine_counters() {
  // The engine counters of this process, as any telemetry client sees them.
  dpdat::tools::TelemetryClient t;
  if (!t.open(dpdat::tools::TelemetryClient::socket_of(getpid()))) return nullptr;
  const nlohmann::json names = t.query("/dpdat/engines");
  if (!names.is_array() || names.empty()) return nullptr;
  return t.query("/dpdat/engine," + names[0].get<std::string>());
}

int serve(const std::string& name, double seconds, const std::string& stop, size_t max_conns) {
  Ia d(name);
  DAT_EVD_HANDLE cr_evd;
  DAT_PSP_HANDLE psp;
  check(dat_evd_create(d.ia, 256, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd), "dat_evd_create cr");
  check(dat_psp_create(d.ia, kQual, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create");
  std::printf("victim: listening on %s, qualifier %llu, pid %ld\n", name.c_str(),
              static_cast<unsigned long long>(kQual), static_cast<long>(getpid()));
  std::fflush(stdout);
  std::map<DAT_EP_HANDLE, Conn> conns;
  uint64_t accepted = 0, rejected = 0, established = 0, ended = 0;
  std::map<std::string, uint64_t> endings;
  bool intact = true;
  const double deadline = now_s() + seconds;
  auto end_conn = [&](DAT_EP_HANDLE ep, const char* why) {
    auto it = conns.find(ep);
    if (it == conns.end()) return;
    if (!it->second.canaries_ok()) {
      intact = false;
      std::fprintf(stderr, "victim: a canary next to a connection's region changed\n");
    }
    check(dat_ep_free(ep), "dat_ep_free");
    check(dat_lmr_free(it->second.lmr), "dat_lmr_free");
    conns.erase(it);
    endings[why]++;
    ++ended;
  };
  while (now_s() < deadline && access(stop.c_str(), F_OK) != 0) {
    DAT_EVENT ev;
    DAT_COUNT nmore;
    bool busy = false;
    if (dat_evd_dequeue(cr_evd, &ev) == DAT_SUCCESS) {
      busy = true;
      if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) die(3, "unexpected CR EVD event");
      const DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
      if (conns.size() >= max_conns) {
        check(dat_cr_reject(cr), "dat_cr_reject");
        ++rejected;
        continue;
      }
      DAT_EP_HANDLE ep;
      check(dat_ep_create(d.ia, d.pz, d.dto, d.dto, d.conn, nullptr, &ep), "dat_ep_create");
      Conn& c = conns[ep];
      c.mem.assign(2 * kCanary + kRegion, kCanaryByte);
      std::memset(c.mem.data() + kCanary, 0, kRegion);
      DAT_REGION_DESCRIPTION rd;
      rd.for_va = c.mem.data() + kCanary;
      DAT_LMR_CONTEXT lctx;
      DAT_RMR_CONTEXT rctx;
      DAT_VLEN got;
      DAT_VADDR gva;
      const DAT_RETURN r = dat_lmr_create(d.ia, DAT_MEM_TYPE_VIRTUAL, rd, kRegion, d.pz,
                                          DAT_MEM_PRIV_ALL_FLAG, &c.lmr, &lctx, &rctx, &got, &gva);
      check(r, "dat_lmr_create");
      uint8_t pdata[16];
      const uint64_t va = reinterpret_cast<uintptr_t>(rd.for_va);
      const uint32_t key = rctx, len = kRegion;
      std::memcpy(pdata, &va, 8);
      std::memcpy(pdata + 8, &key, 4);
      std::memcpy(pdata + 12, &len, 4);
      check(dat_cr_accept(cr, ep, sizeof pdata, pdata), "dat_cr_accept");
      ++accepted;
    }
    auto on_conn = [&](const DAT_EVENT& e) {
      const DAT_EP_HANDLE ep = e.event_data.connect_event_data.ep_handle;
      switch (e.event_number) {
        case DAT_CONNECTION_EVENT_ESTABLISHED:
          ++established;
          if (conns.count(ep) != 0) conns[ep].established = true;
          break;
        case DAT_CONNECTION_EVENT_DISCONNECTED:
          end_conn(ep, "disconnected");
          break;
        case DAT_CONNECTION_EVENT_BROKEN:
          end_conn(ep, "broken");
          break;
        default:
          end_conn(ep, "not-established");
          break;
      }
    };
    while (dat_evd_dequeue(d.conn, &ev) == DAT_SUCCESS) {
      busy = true;
      on_conn(ev);
    }
    while (dat_evd_dequeue(d.dto, &ev) == DAT_SUCCESS) busy = true;  // flushes of dead EPs
    while (dat_evd_dequeue(d.async, &ev) == DAT_SUCCESS) busy = true;
    if (!busy && dat_evd_wait(d.conn, 1000, 1, &ev, &nmore) == DAT_SUCCESS) on_conn(ev);
  }
  const nlohmann::json counters = engine_counters();
  for (auto& [ep, c] : conns) {
    if (!c.canaries_ok()) {
      intact = false;
      std::fprintf(stderr, "victim: a canary next to a live connection's region changed\n");
    }
  }
  nlohmann::json out = {{"accepted", accepted},       {"rejected_over_cap", rejected},
                        {"established", established}, {"ended", ended},
                        {"endings", endings},         {"live_at_end", conns.size()},
                        {"canaries_intact", intact},  {"engine", counters}};
  std::printf("victim-json: %s\n", out.dump().c_str());
  std::fflush(stdout);
  std::_Exit(intact ? 0 : 5);  // the interface is torn down with the process
}

int honest(const std::string& name, const std::string& server, double seconds,
           const std::string& stop, uint64_t reconnect_every) {
  Ia d(name);
  DAT_EP_HANDLE ep;
  check(dat_ep_create(d.ia, d.pz, d.dto, d.dto, d.conn, nullptr, &ep), "dat_ep_create");
  std::vector<uint8_t> buf(2 * kRegion);
  DAT_REGION_DESCRIPTION rd;
  rd.for_va = buf.data();
  DAT_LMR_HANDLE lmr;
  DAT_LMR_CONTEXT lctx;
  DAT_RMR_CONTEXT rctx;
  DAT_VLEN got;
  DAT_VADDR gva;
  check(dat_lmr_create(d.ia, DAT_MEM_TYPE_VIRTUAL, rd, buf.size(), d.pz, DAT_MEM_PRIV_ALL_FLAG,
                       &lmr, &lctx, &rctx, &got, &gva),
        "dat_lmr_create");
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  if (inet_pton(AF_INET, server.c_str(), &sin.sin_addr) != 1) die(2, "bad server IPv4");
  DAT_EVENT ev;
  DAT_COUNT nmore;
  Region reg{};
  // Connects (retrying a refused or timed-out attempt for up to 30 s: the
  // victim refuses connections over its --max-conns while a flood's
  // half-open requests hold them, which the CM keeps for its retries, longer
  // on a loaded host) and takes the victim's region from the REP's private
  // data.
  auto connect = [&] {
    for (int attempt = 1;; ++attempt) {
      check(dat_ep_connect(ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sin), kQual, 5000000,
                           sizeof kHonestPdata, const_cast<char*>(kHonestPdata),
                           DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
            "dat_ep_connect");
      check(dat_evd_wait(d.conn, 10000000, 1, &ev, &nmore), "waiting for the connection");
      if (ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) break;
      if (attempt >= 150) die(4, "could not connect");
      check(dat_ep_reset(ep), "dat_ep_reset");
      usleep(200000);
    }
    const DAT_CONNECTION_EVENT_DATA& cd = ev.event_data.connect_event_data;
    if (cd.private_data_size < 16) die(3, "no region in the REP private data");
    std::memcpy(&reg.va, cd.private_data, 8);
    std::memcpy(&reg.rkey, static_cast<uint8_t*>(cd.private_data) + 8, 4);
    std::memcpy(&reg.len, static_cast<uint8_t*>(cd.private_data) + 12, 4);
  };
  connect();
  std::printf("honest: connected, region of %u bytes\n", reg.len);
  std::fflush(stdout);
  uint64_t reconnects = 0;
  std::mt19937 rng(7);
  uint64_t transfers = 0, bytes = 0;
  const double end = now_s() + seconds;
  auto run = [&](bool write, uint8_t* local, uint32_t len, uint64_t cookie) {
    DAT_LMR_TRIPLET l{lctx, 0, reinterpret_cast<uintptr_t>(local), len};
    DAT_RMR_TRIPLET r{reg.rkey, 0, reg.va, len};
    DAT_DTO_COOKIE c;
    c.as_64 = cookie;
    check(write ? dat_ep_post_rdma_write(ep, 1, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG)
                : dat_ep_post_rdma_read(ep, 1, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG),
          write ? "dat_ep_post_rdma_write" : "dat_ep_post_rdma_read");
    check(dat_evd_wait(d.dto, 10000000, 1, &ev, &nmore), "waiting for a completion");
    if (ev.event_number != DAT_DTO_COMPLETION_EVENT ||
        ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS ||
        ev.event_data.dto_completion_event_data.user_cookie.as_64 != cookie)
      die(4, std::string(write ? "RDMA WRITE" : "RDMA READ") + " failed after " +
                 std::to_string(transfers) + " verified transfers");
  };
  while (now_s() < end && access(stop.c_str(), F_OK) != 0) {
    const uint32_t len = 1 + static_cast<uint32_t>(rng() % reg.len);
    uint8_t* src = buf.data();
    uint8_t* dst = buf.data() + kRegion;
    const uint8_t seed = static_cast<uint8_t>(rng());
    for (uint32_t i = 0; i < len; ++i) src[i] = static_cast<uint8_t>(seed + i * 31 + (i >> 8));
    std::memset(dst, 0, len);
    run(true, src, len, 2 * transfers + 1);
    run(false, dst, len, 2 * transfers + 2);
    if (std::memcmp(src, dst, len) != 0)
      die(4, "transfer " + std::to_string(transfers) + ": read back differs from what was written");
    ++transfers;
    bytes += len;
    if (reconnect_every != 0 && transfers % reconnect_every == 0) {
      check(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
      check(dat_evd_wait(d.conn, 5000000, 1, &ev, &nmore), "waiting for the disconnect");
      if (ev.event_number != DAT_CONNECTION_EVENT_DISCONNECTED) die(4, "the disconnect failed");
      check(dat_ep_reset(ep), "dat_ep_reset");
      connect();
      ++reconnects;
    }
  }
  check(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
  (void)dat_evd_wait(d.conn, 5000000, 1, &ev, &nmore);
  std::printf(
      "honest: %llu transfers (%llu bytes) written and read back byte-exact, %llu reconnects\n",
      static_cast<unsigned long long>(transfers), static_cast<unsigned long long>(bytes),
      static_cast<unsigned long long>(reconnects));
  std::fflush(stdout);
  std::_Exit(transfers > 0 ? 0 : 4);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the honest sides of the hostile-peer test"};
  std::string ia, server, stop = "/nonexistent";
  double seconds = 10;
  size_t max_conns = 32;
  uint64_t reconnect_every = 0;
  auto* srv = app.add_option("--serve", ia, "serve on this IA (the victim)");
  auto* hon = app.add_option("--honest", ia, "be the honest peer on this IA")->excludes(srv);
  app.add_option("--server", server, "the victim's IPv4 (with --honest)")->needs(hon);
  app.add_option("--seconds", seconds, "how long to run")->check(CLI::PositiveNumber);
  app.add_option("--stop", stop, "end early when this file exists");
  app.add_option("--reconnect-every", reconnect_every,
                 "honest: disconnect and connect again after every N transfers (0: never)")
      ->needs(hon);
  app.add_option("--max-conns", max_conns, "live connections the victim accepts")
      ->check(CLI::Range(1, 4096));
  try {
    app.parse(argc, argv);
    if (srv->count() + hon->count() != 1) throw CLI::ValidationError("give --serve or --honest");
    if (hon->count() != 0 && server.empty()) throw CLI::ValidationError("--honest needs --server");
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "victim: %s\n", e.what());
    return 2;
  }
  return srv->count() != 0 ? serve(ia, seconds, stop, max_conns)
                           : honest(ia, server, seconds, stop, reconnect_every);
}
