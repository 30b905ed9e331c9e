// dpdat-perf: perftest-style bandwidth and latency through the public uDAPL
// 1.2 API (libdat), as perftest drives verbs; dpdat-perf-dat2: the same over
// DAT 2.0 (libdat2), with the IB extensions' atomics.  `dpdat-perf --help`
// lists the options; the README has the table.

#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "launch.hpp"
#include "modes.hpp"
#include "options.hpp"
#include "settings/settings.hpp"

namespace dpdat::perf {

namespace {

uint64_t counter(const Run& r, const std::string& key) {
  const auto it = r.counters.find(key);
  return it == r.counters.end() ? 0 : it->second;
}

// One line per engine (this side's, then the peer's): what it moved, what it
// handed to the engine owning a frame's queue pair, its timers; then the CPU
// time of each progress thread.
void print_engines(const Run& r) {
  static const std::string kTail = ".rx_frames";
  bool header = false;
  for (const std::string side : {"", "peer."}) {
    const std::string head = side + "engine.";
    for (const auto& [k, v] : r.counters) {
      if (k.rfind(head, 0) != 0 || k.size() <= head.size() + kTail.size() ||
          k.compare(k.size() - kTail.size(), std::string::npos, kTail) != 0)
        continue;
      const std::string name = k.substr(head.size(), k.size() - head.size() - kTail.size());
      const std::string p = head + name + ".";
      if (!header) {
        std::printf("\n engines: %-16s %12s %12s %10s %10s %9s %9s\n", "", "rx_frames", "tx_frames",
                    "handed_off", "handed_in", "timeouts", "tlp");
        header = true;
      }
      std::printf("  %-25s %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %10" PRIu64 " %9" PRIu64
                  " %9" PRIu64 "\n",
                  (side.empty() ? name : "peer " + name).c_str(), v, counter(r, p + "tx_frames"),
                  counter(r, p + "handed_off"), counter(r, p + "handed_in"),
                  counter(r, p + "qp_timeouts"), counter(r, p + "qp_tlp_probes"));
    }
  }
  std::string threads;
  for (const auto& [k, v] : r.counters) {
    const size_t at = k.find("thread.dpdat-prog");
    if (at == std::string::npos || (at != 0 && k.rfind("peer.", 0) != 0)) continue;
    const size_t from = at + std::string("thread.").size();
    const std::string who =
        (at == 0 ? "" : "peer ") + k.substr(from, k.size() - from - std::string(".cpu_us").size());
    char buf[96];
    std::snprintf(buf, sizeof buf, " %s=%.2fs", who.c_str(), static_cast<double>(v) / 1e6);
    threads += buf;
  }
  if (!threads.empty()) std::printf(" progress threads' CPU time:%s\n", threads.c_str());
}

}  // namespace

int finish_run(const Options& o, const Run& r) {
  print_engines(r);
  if (!r.counters.empty()) {
    std::printf("\n counters (DPDK telemetry):");
    int col = 0;
    for (const auto& [k, v] : r.counters) {
      // The ones that explain a figure (a soak: every one).
      if (o.soak <= 0 && k.find("retrans") == std::string::npos &&
          k.find("timeout") == std::string::npos && k.find("nak") == std::string::npos &&
          k.find("full") == std::string::npos && k.find("rnr") == std::string::npos &&
          k.find("drop") == std::string::npos && k.find("backpressure") == std::string::npos &&
          k.find("stall") == std::string::npos)
        continue;
      std::printf("%s %s=%" PRIu64, col++ % 3 == 0 ? "\n " : "", k.c_str(), v);
    }
    std::printf("\n");
  }
  std::string err;
  if (!o.json.empty() && !write_json(o.json, o, r, &err)) {
    std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
    return 1;
  }
  if (!o.csv.empty() && !write_csv(o.csv, o, r, &err)) {
    std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
    return 1;
  }
  return 0;
}

}  // namespace dpdat::perf

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  dpdat::perf::Options o;
  if (const int rc = dpdat::perf::parse_options(argc, argv, &o); rc >= 0) return rc;
#ifdef DPDAT_PERF_DAT2
  // libdat2 reads its registry when it is loaded: a dat.conf written now
  // takes a fresh start of this program (which then removes it: read once).
  if (const auto ours = dpdat::settings::get(dpdat::settings::Var::kPerfDatConf)) {
    std::remove(ours->c_str());
    unsetenv("DPDAT_PERF_DAT_CONF");
  } else {
    std::string conf, err;
    if (!dpdat::perf::dat2_registry(o, &conf, &err)) {
      std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
      return 1;
    }
    if (!conf.empty()) {
      setenv("DPDAT_PERF_DAT_CONF", conf.c_str(), 1);
      execv("/proc/self/exe", argv);
      std::fprintf(stderr, "dpdat-perf: cannot restart with %s: %s\n", conf.c_str(),
                   std::strerror(errno));
      std::remove(conf.c_str());
      return 1;
    }
  }
  return o.remote() ? dpdat::perf::run_remote(o) : dpdat::perf::run_local(o);
#else
  if (o.atomic()) return dpdat::perf::exec_dat2(argv);
  return o.remote() ? dpdat::perf::run_remote(o) : dpdat::perf::run_local(o);
#endif
}
