#include "sysinfo.hpp"

#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

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

namespace {

// One telemetry command's JSON answer ("" on failure).
std::string query(int fd, const std::string& cmd) {
  if (write(fd, cmd.data(), cmd.size()) != static_cast<ssize_t>(cmd.size())) return "";
  std::string buf(65536, '\0');
  const ssize_t n = read(fd, buf.data(), buf.size());
  if (n <= 0) return "";
  buf.resize(static_cast<size_t>(n));
  return buf;
}

}  // namespace

std::map<std::string, uint64_t> telemetry_counters() {
  std::map<std::string, uint64_t> out;
  const std::string path = "/var/run/dpdk/dpdat" + std::to_string(getpid()) + "/dpdk_telemetry.v2";
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  if (fd < 0) return out;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    char greeting[1024];
    if (read(fd, greeting, sizeof greeting) > 0) {
      const auto engines = nlohmann::json::parse(query(fd, "/dpdat/engines"), nullptr, false);
      if (engines.is_object() && engines.contains("/dpdat/engines") &&
          engines["/dpdat/engines"].is_array())
        for (const auto& name : engines["/dpdat/engines"]) {
          if (!name.is_string()) continue;
          // The answer is keyed by the command without its parameter.
          const auto c = nlohmann::json::parse(
              query(fd, "/dpdat/engine," + name.get<std::string>()), nullptr, false);
          const char* key = "/dpdat/engine";
          if (!c.is_object() || !c.contains(key) || !c[key].is_object()) continue;
          for (const auto& [k, v] : c[key].items())
            if (v.is_number_unsigned()) out["engine." + name.get<std::string>() + "." + k] = v;
        }
    }
  }
  close(fd);
  return out;
}

}  // namespace dpdat::perf
