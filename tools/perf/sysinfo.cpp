#include "sysinfo.hpp"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "telemetry_client.hpp"

namespace dpdat::perf {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

double cpu_seconds() {
  // The same user + sys time /proc/self/stat reports, at nanosecond
  // resolution rather than in clock ticks (a latency round lasts a few ms).
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

CpuMark CpuMark::now() { return CpuMark{cpu_seconds(), perf::now_ns()}; }

double CpuMark::pct_since(const CpuMark& s) const {
  const double wall = static_cast<double>(t - s.t) / 1e9;
  return wall > 0 ? 100.0 * (cpu - s.cpu) / wall : 0.0;
}

std::string affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "";
  std::string out;
  for (size_t c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    size_t e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    if (!out.empty()) out += ',';
    out += std::to_string(c);
    if (e > c) out += '-' + std::to_string(e);
    c = e;
  }
  return out;
}

std::map<std::string, uint64_t> telemetry_counters() {
  std::map<std::string, uint64_t> out;
  tools::TelemetryClient t;
  if (!t.open(tools::TelemetryClient::socket_of(getpid()))) return out;
  const auto ports = t.query("/dpdat/ports");
  if (ports.is_array())
    for (const auto& id : ports) {
      if (!id.is_number_unsigned()) continue;
      const std::string n = std::to_string(id.get<uint64_t>());
      const auto c = t.query("/dpdat/port," + n);
      if (!c.is_object()) continue;
      for (const auto& [k, v] : c.items())
        if (v.is_number_unsigned()) out["port." + n + "." + k] = v;
    }
  const auto engines = t.query("/dpdat/engines");
  if (!engines.is_array()) return out;
  for (const auto& name : engines) {
    if (!name.is_string()) continue;
    const auto c = t.query("/dpdat/engine," + name.get<std::string>());
    if (!c.is_object()) continue;
    for (const auto& [k, v] : c.items())
      if (v.is_number_unsigned()) out["engine." + name.get<std::string>() + "." + k] = v;
  }
  return out;
}

}  // namespace dpdat::perf
