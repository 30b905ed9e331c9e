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

#include "launch.hpp"
#include "modes.hpp"
#include "options.hpp"

namespace dpdat::perf {

int finish_run(const Options& o, const Run& r) {
  if (!r.counters.empty()) {
    std::printf("\n counters (DPDK telemetry):");
    int col = 0;
    for (const auto& [k, v] : r.counters) {
      // The ones that explain a figure.
      if (k.find("retrans") == std::string::npos && k.find("timeout") == std::string::npos &&
          k.find("nak") == std::string::npos && k.find("full") == std::string::npos &&
          k.find("rnr") == std::string::npos && k.find("drop") == std::string::npos &&
          k.find("backpressure") == std::string::npos && k.find("stall") == std::string::npos)
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
  if (const char* ours = std::getenv("DPDAT_PERF_DAT_CONF"); ours != nullptr) {
    std::remove(ours);
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
