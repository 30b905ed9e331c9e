// One process: the active side on IA dpdat0, the passive side on dpdat1 (the
// two ends of the built-in in-process link), connected through a PSP.

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "config.hpp"
#include "modes.hpp"
#include "runs.hpp"
#include "settings/settings.hpp"
#include "sysinfo.hpp"

namespace dpdat::perf {

namespace {

// Connects EP k of `a` to EP k of `b` (b listens), one thread driving both.
bool connect_pair(Side& a, Side& b, const Options& o, std::string* err) {
  if (!b.listen(o.conn_qual, err)) return false;
  for (size_t k = 0; k < a.qps(); ++k) {
    if (!a.connect(k, b.address(), o.conn_qual, err) || !b.accept(k, 5'000'000, err) ||
        !a.established(k, 5'000'000, err) || !b.established(k, 5'000'000, err))
      return false;
  }
  return true;
}

}  // namespace

int run_local(const Options& o) {
  std::string more;
  if (!o.progress.empty()) more += ";progress=" + o.progress;
  if (!o.ia_params.empty()) more += ";" + o.ia_params;
  if (!more.empty()) {
    // --progress and --ia-params go into each IA's configuration: appended
    // (a later key wins) to the definition the configuration module resolves
    // (DPDAT_IA_<NAME>, the DPDAT_CONF file or the built-in), and set as
    // DPDAT_IA_<NAME>, which takes precedence over the others.
    for (const std::string& name : {o.ia_a, o.ia_b}) {
      const auto e = dat::find_ia(name);
      if (!e || e->text.empty()) {
        std::fprintf(stderr,
                     "dpdat-perf: --progress/--ia-params: IA %s is not configured (%s, %s)\n",
                     name.c_str(), settings::ia_var(name).c_str(), dat::conf_path().c_str());
        return 2;
      }
      setenv(settings::ia_var(name).c_str(), (e->text + more).c_str(), 1);
    }
  }
  Layout L = layout_for(o);
  Side a, b;
  std::string err;
  if (!a.open(o.ia_a, o.qps, o.tx_depth, L.total(), &err) ||
      !b.open(o.ia_b, o.qps, o.tx_depth, L.total(), &err) || !connect_pair(a, b, o, &err)) {
    std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
    return 1;
  }
  Run run;
  run.link = "in-process net_ring (" + o.ia_a + " <-> " + o.ia_b + ")";
  run.pmd = "net_ring";
  run.cpus = affinity();
  std::printf("dpdat-perf: %s over the %s API, %s, %u EP%s, progress %s\n", o.op.c_str(), kApiName,
              run.link.c_str(), o.qps, o.qps > 1 ? "s" : "",
              o.progress.empty() ? "default" : o.progress.c_str());
  const DAT_RMR_TRIPLET ta = a.triplet(), tb = b.triplet();
  auto drive_b = [&] { (void)drive_side(b, &err); };
  if (o.bw) {
    print_bw_header(o);
    for (size_t n : o.sizes) {
      std::vector<Flow> flows;
      for (size_t k = 0; k < o.qps; ++k) {
        Flow f{&a, k, tb};
        if (o.op == "send") f.rs = &b, f.rk = k;
        flows.push_back(f);
        if (o.bidirectional) {
          Flow g{&b, k, ta};
          if (o.op == "send") g.rs = &a, g.rk = k;
          flows.push_back(g);
        }
      }
      fill_pattern(a, L, n, 0x11);
      fill_pattern(b, L, n, 0x22);
      BwFigures f;
      // The passive side's progress; bidirectional flows drive both sides.
      // Only request EVDs: receive completions are the flows' to count.
      std::vector<Done> scratch;
      auto drive_req = [&] {
        if (o.bidirectional) return;
        for (size_t k = 0; k < b.qps(); ++k) (void)b.reap(b.conn(k).req, &scratch, &err);
        scratch.clear();
      };
      if (!run_bw(flows, o, L, n, bw_iters(o, n), drive_req, &f, &err)) {
        std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
        return 1;
      }
      if (o.verify && o.op != "read" && !o.atomic()) {
        if (!verify_slices(a, L, n, tb, drive_b, &err) ||
            (o.bidirectional && !verify_slices(
                                    b, L, n, ta, [&] { (void)drive_side(a, &err); }, &err))) {
          std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
          return 1;
        }
        f.verified = true;
      }
      print_bw(o, f);
      run.bw.push_back(f);
    }
  }
  if (o.lat) {
    print_lat_header(o, o.half_round_trip());
    const std::vector<uint64_t> sizes =
        o.sizes.size() == 1 || !o.bw ? o.sizes : std::vector<uint64_t>{8};
    for (size_t n : sizes) {
      if (!lat_prepare(a, o.op, L, &err) || !lat_prepare(b, o.op, L, &err)) {
        std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
        return 1;
      }
      LatFigures f;
      auto step = [&](size_t k, uint8_t tag) {
        return echo_once(b, o.op, L, k, n, tag, ta, dequeue_while_polling(o), &err);
      };
      if (!run_lat(a, o, L, n, o.iters != 0 ? o.iters : 10000, tb, step, drive_b, &f, &err)) {
        std::fprintf(stderr, "dpdat-perf: %s\n", err.c_str());
        return 1;
      }
      print_lat(f);
      if (!o.histogram.empty() && !write_histogram(o.histogram, f)) {
        std::fprintf(stderr, "dpdat-perf: cannot write %s\n", o.histogram.c_str());
        return 1;
      }
      run.lat.push_back(std::move(f));
    }
  }
  run.counters = telemetry_counters();
  return finish_run(o, run);
}

}  // namespace dpdat::perf
