#pragma once
// dpdat-perf's figures and how they are written: the perftest-style table on
// stdout, JSON (nlohmann-json, schema in tools/perf/result.schema.json) and CSV.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "options.hpp"

namespace dpdat::perf {

struct BwFigures {
  uint64_t size = 0;
  uint64_t iters = 0;  // messages measured (all QPs, all directions)
  double secs = 0;
  double avg_mbs = 0;   // MB/s, MB = 2^20 B
  double peak_mbs = 0;  // best rate over any 1/20 of the run
  double msg_rate_mpps = 0;
  double cpu_local = 0;               // per cent of one core, user + sys over the measurement
  double cpu_peer = -1;               // -1: the peer is this process (one-process run)
  std::vector<uint64_t> per_qp_msgs;  // messages each QP completed (both directions)
  bool verified = false;
};

struct LatFigures {
  uint64_t size = 0;
  uint64_t iters = 0;
  bool half_round_trip = true;  // WRITE/SEND: half; READ: full round trip
  double min_us = 0, max_us = 0, median_us = 0, avg_us = 0, stdev_us = 0, p99_us = 0, p999_us = 0;
  double cpu_local = 0;
  double cpu_peer = -1;
  std::vector<double> samples;  // µs, sorted
};

struct Run {
  std::string link;      // "in-process net_ring" or the vdev
  std::string pmd;       // PMD name
  std::string progress;  // progress mode asked ("" = interface default)
  std::string cpus;      // this process's CPU affinity
  std::vector<BwFigures> bw;
  std::vector<LatFigures> lat;
  std::map<std::string, uint64_t> counters;  // from DPDK telemetry, "engine.key"
};

// Fills the statistics of `f` from its samples (sorts them).
void finish_lat(LatFigures* f);

void print_bw_header(const Options& o);
void print_bw(const Options& o, const BwFigures& f);
void print_lat_header(const Options& o, bool half);
void print_lat(const LatFigures& f);
// --histogram: '-' prints buckets, else writes "us,count" lines.  False on I/O error.
bool write_histogram(const std::string& to, const LatFigures& f);

// --json / --csv.  False with *err on I/O error.
bool write_json(const std::string& path, const Options& o, const Run& r, std::string* err);
bool write_csv(const std::string& path, const Options& o, const Run& r, std::string* err);

}  // namespace dpdat::perf
