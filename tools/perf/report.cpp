#include "report.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dat_api.hpp"

#ifndef DPDAT_VERSION
#define DPDAT_VERSION "unknown"
#endif
#ifndef DPDAT_GIT_REV
#define DPDAT_GIT_REV "unknown"
#endif

namespace dpdat::perf {

void finish_lat(LatFigures* f) {
  auto& s = f->samples;
  if (s.empty()) return;
  std::sort(s.begin(), s.end());
  auto pct = [&](double p) {
    return s[static_cast<size_t>(p * static_cast<double>(s.size() - 1) + 0.5)];
  };
  double sum = 0;
  for (double v : s) sum += v;
  const double n = static_cast<double>(s.size());
  f->avg_us = sum / n;
  double var = 0;
  for (double v : s) var += (v - f->avg_us) * (v - f->avg_us);
  f->stdev_us = s.size() > 1 ? std::sqrt(var / (n - 1)) : 0.0;
  f->min_us = s.front();
  f->max_us = s.back();
  f->median_us = pct(0.5);
  f->p99_us = pct(0.99);
  f->p999_us = pct(0.999);
  f->iters = s.size();
}

void print_bw_header(const Options& o) {
  const char* unit = o.report_gbits ? "[Gb/s]" : "[MB/s]";
  std::printf("\n %-10s %-12s %-14s%-6s %-14s%-6s %-14s %-9s %-9s\n", "#bytes", "#iterations",
              "BW peak", unit, "BW average", unit, "MsgRate[Mpps]", "CPU[%]", "peer[%]");
}

void print_bw(const Options& o, const BwFigures& f) {
  const double k = o.report_gbits ? 8.0 * 1048576.0 / 1e9 : 1.0;
  char peer[16] = "-";
  if (f.cpu_peer >= 0) std::snprintf(peer, sizeof peer, "%.1f", f.cpu_peer);
  std::printf(" %-10" PRIu64 " %-12" PRIu64 " %-20.2f %-20.2f %-14.4f %-9.1f %-9s%s\n", f.size,
              f.iters, f.peak_mbs * k, f.avg_mbs * k, f.msg_rate_mpps, f.cpu_local, peer,
              f.verified ? "  verified" : "");
}

void print_lat_header(const Options& o, bool half) {
  (void)o;
  std::printf("\n latency: %s\n", half ? "half round trip (ping-pong / 2)" : "full round trip");
  std::printf(" %-10s %-12s %-9s %-9s %-9s %-9s %-9s %-9s %-9s %-7s\n", "#bytes", "#iterations",
              "t_min[us]", "t_max", "t_typical", "t_avg", "t_stdev", "t_99%", "t_99.9%", "CPU[%]");
}

void print_lat(const LatFigures& f) {
  std::printf(" %-10" PRIu64 " %-12" PRIu64
              " %-9.2f %-9.2f %-9.2f %-9.2f %-9.2f %-9.2f %-9.2f %-7.1f\n",
              f.size, f.iters, f.min_us, f.max_us, f.median_us, f.avg_us, f.stdev_us, f.p99_us,
              f.p999_us, f.cpu_local);
}

bool write_histogram(const std::string& to, const LatFigures& f) {
  if (f.samples.empty()) return true;
  // Buckets of 1/20 of the median, up to the 99.9th percentile; the tail in one.
  const double w = std::max(0.01, f.median_us / 20.0);
  std::map<int64_t, uint64_t> h;
  for (double v : f.samples) h[static_cast<int64_t>(std::min(v, f.p999_us + w) / w)]++;
  FILE* out = to == "-" ? stdout : std::fopen(to.c_str(), "w");
  if (out == nullptr) return false;
  if (to == "-")
    std::printf("\n histogram (%" PRIu64 " B): bucket_us count\n", f.size);
  else
    std::fprintf(out, "us,count\n");
  for (const auto& [b, c] : h)
    std::fprintf(out, to == "-" ? " %.2f %" PRIu64 "\n" : "%.3f,%" PRIu64 "\n",
                 static_cast<double>(b) * w, c);
  const bool ok = std::ferror(out) == 0;
  if (out != stdout) return std::fclose(out) == 0 && ok;
  return ok;
}

namespace {

// What this side's port(s) report through telemetry: the MTU in use and
// the PMTU it allows (the smallest over the ports of the run; 0 unknown).
uint64_t port_value(const Run& r, const std::string& key) {
  uint64_t v = 0;
  for (const auto& [k, x] : r.counters)
    if (k.rfind("port.", 0) == 0 && k.size() > key.size() &&
        k.compare(k.size() - key.size() - 1, std::string::npos, "." + key) == 0)
      v = v == 0 ? x : std::min(v, x);
  return v;
}

nlohmann::json config_json(const Options& o, const Run& r) {
  const uint64_t max_pmtu = port_value(r, "max_pmtu");
  const uint64_t pmtu = o.pmtu != 0 && max_pmtu != 0 ? std::min<uint64_t>(o.pmtu, max_pmtu)
                        : o.pmtu != 0                ? o.pmtu
                                                     : max_pmtu;
  return {{"op", o.op},
          {"sizes", o.sizes},
          {"iters", o.iters},
          {"duration_s", o.duration},
          {"qps", o.qps},
          {"threads", o.threads},
          {"bidirectional", o.bidirectional},
          {"tx_depth", o.tx_depth},
          {"post_list", o.post_list},
          {"cq_mod", o.cq_mod},
          {"mode", o.server              ? "server"
                   : o.client_of.empty() ? "one-process"
                                         : "client"},
          {"link", r.link},
          {"pmd", r.pmd},
          {"mtu", o.mtu},
          {"pmtu_cap", o.pmtu},
          {"port_mtu", port_value(r, "mtu")},
          {"pmtu", pmtu},
          {"progress", o.progress.empty() ? "default" : o.progress},
          {"ia_params", o.ia_params},
          {"cpus", r.cpus},
          {"argv", o.argv}};
}

}  // namespace

bool write_json(const std::string& path, const Options& o, const Run& r, std::string* err) {
  nlohmann::json j;
  j["tool"] = "dpdat-perf";
  j["api"] = kApiName;
  j["version"] = DPDAT_VERSION;
  j["git_revision"] = DPDAT_GIT_REV;
  j["config"] = config_json(o, r);
  j["bw"] = nlohmann::json::array();
  for (const BwFigures& f : r.bw)
    j["bw"].push_back({{"size", f.size},
                       {"iters", f.iters},
                       {"secs", f.secs},
                       {"avg_mbs", f.avg_mbs},
                       {"peak_mbs", f.peak_mbs},
                       {"avg_gbits", f.avg_mbs * 8.0 * 1048576.0 / 1e9},
                       {"peak_gbits", f.peak_mbs * 8.0 * 1048576.0 / 1e9},
                       {"msg_rate_mpps", f.msg_rate_mpps},
                       {"cpu_local_pct", f.cpu_local},
                       {"cpu_peer_pct", f.cpu_peer},
                       {"per_qp_msgs", f.per_qp_msgs},
                       {"verified", f.verified}});
  j["lat"] = nlohmann::json::array();
  for (const LatFigures& f : r.lat)
    j["lat"].push_back({{"size", f.size},
                        {"iters", f.iters},
                        {"half_round_trip", f.half_round_trip},
                        {"min_us", f.min_us},
                        {"max_us", f.max_us},
                        {"median_us", f.median_us},
                        {"avg_us", f.avg_us},
                        {"stdev_us", f.stdev_us},
                        {"p99_us", f.p99_us},
                        {"p999_us", f.p999_us},
                        {"cpu_local_pct", f.cpu_local},
                        {"cpu_peer_pct", f.cpu_peer},
                        {"samples_us", f.samples}});
  j["counters"] = r.counters;
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  if (!out) {
    *err = "cannot write " + path;
    return false;
  }
  return true;
}

bool write_csv(const std::string& path, const Options& o, const Run& r, std::string* err) {
  std::ofstream out(path);
  out << "kind,op,size,iters,qps,bidirectional,link,progress,avg_mbs,peak_mbs,msg_rate_mpps,"
         "min_us,median_us,avg_us,stdev_us,p99_us,p999_us,max_us,cpu_local_pct,cpu_peer_pct\n";
  const std::string common_tail = "," + std::to_string(o.qps) + "," +
                                  (o.bidirectional ? "1" : "0") + "," + r.link + "," +
                                  (o.progress.empty() ? "default" : o.progress);
  for (const BwFigures& f : r.bw)
    out << "bw," << o.op << "," << f.size << "," << f.iters << common_tail << "," << f.avg_mbs
        << "," << f.peak_mbs << "," << f.msg_rate_mpps << ",,,,,,,," << f.cpu_local << ","
        << f.cpu_peer << "\n";
  for (const LatFigures& f : r.lat)
    out << "lat," << o.op << "," << f.size << "," << f.iters << common_tail << ",,,," << f.min_us
        << "," << f.median_us << "," << f.avg_us << "," << f.stdev_us << "," << f.p99_us << ","
        << f.p999_us << "," << f.max_us << "," << f.cpu_local << "," << f.cpu_peer << "\n";
  if (!out) {
    *err = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace dpdat::perf
