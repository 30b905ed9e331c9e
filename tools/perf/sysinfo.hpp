#pragma once
// What the process can read about itself: CPU time, CPU
// affinity, the clock, and dpdat's counters through DPDK telemetry.

#include <cstdint>
#include <map>
#include <string>

namespace dpdat::perf {

uint64_t now_ns();

// user + sys CPU seconds of this process so far (CLOCK_PROCESS_CPUTIME_ID:
// what /proc/self/stat counts, in ns instead of clock ticks).
double cpu_seconds();

// Per cent of one core between two (cpu_seconds, now_ns) readings.
struct CpuMark {
  double cpu = 0;
  uint64_t t = 0;
  static CpuMark now();
  double pct_since(const CpuMark& start) const;
};

// This process's resident memory (VmRSS of /proc/self/status) in KiB; 0 if unreadable.
uint64_t rss_kib();

// This process's CPU affinity as a list ("0", "0-1").
std::string affinity();

// CPU time (user + system, microseconds, clock-tick resolution) of each
// engine progress thread (dpdat-prog<i>) since it started, keyed
// "thread.dpdat-prog<i>.cpu_us".
std::map<std::string, uint64_t> progress_thread_cpu();

// This process's dpdat counters: progress_thread_cpu(), and the engine and
// port counters read over its DPDK telemetry socket
// (/var/run/dpdk/dpdat<pid>/dpdk_telemetry.v2, dpdat's default EAL file
// prefix), keyed "engine.<name>.<counter>" and "port.<id>.<counter>" (with
// the port's MTU and the PMTU it allows).  Those are missing when the socket
// is not there (e.g. DPDAT_EAL_ARGS chose another prefix).
std::map<std::string, uint64_t> telemetry_counters();

}  // namespace dpdat::perf
