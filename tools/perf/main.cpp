// dpdat-perf: perftest-style bandwidth and latency through the public uDAPL
// 1.2 API (libdat), as perftest drives verbs.  `dpdat-perf --help` lists the
// options; the README has the table.

#include <cinttypes>
#include <cstdio>

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
  return o.remote() ? dpdat::perf::run_remote(o) : dpdat::perf::run_local(o);
}
