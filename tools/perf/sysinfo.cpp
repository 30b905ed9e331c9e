#include "sysinfo.hpp"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

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

uint64_t rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  return 0;
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

std::map<std::string, uint64_t> progress_thread_cpu() {
  std::map<std::string, uint64_t> out;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return out;
  const double us_per_tick = 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string task = std::string("/proc/self/task/") + e->d_name;
    std::ifstream comm(task + "/comm");
    std::string name;
    if (!std::getline(comm, name) || name.rfind("dpdat-prog", 0) != 0) continue;
    // stat: "tid (comm) state ..." with utime and stime the 14th and 15th
    // fields; comm may hold spaces, so count from the closing parenthesis.
    std::ifstream stat(task + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    uint64_t utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
    }
    // Two interfaces in one process (one-process mode) both have a
    // dpdat-prog0: the second is dpdat-prog0#2.
    std::string key = "thread." + name;
    for (int n = 2; out.count(key + ".cpu_us") != 0; ++n)
      key = "thread." + name + "#" + std::to_string(n);
    out[key + ".cpu_us"] = static_cast<uint64_t>(static_cast<double>(utime + stime) * us_per_tick);
  }
  closedir(d);
  return out;
}

std::map<std::string, uint64_t> telemetry_counters() {
  std::map<std::string, uint64_t> out = progress_thread_cpu();
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
