// dpdat-engine-perf: options, --json, and the choice between one process
// and two (see common.hpp).

#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "common.hpp"
#include "rc/engine/engine_group.hpp"

namespace dpdat::engine_perf {

nlohmann::json g_bw = nlohmann::json::array();
nlohmann::json g_lat = nlohmann::json::array();

int finish(const Options& o, int rc) {
  if (o.json.empty() || rc != 0) return rc;
  nlohmann::json j = {{"tool", "dpdat-engine-perf"},
                      {"level", "engine (no DAT layer)"},
                      {"op", o.op},
                      {"link", o.vdev.empty() ? "in-process net_ring" : o.vdev},
                      {"progress", o.thread_progress ? "thread" : "inline"},
                      {"per_engine_threads", o.per_engine_threads},
                      {"cc", std::string(rc::cc_mode_name(o.cc))},
                      {"bw", g_bw},
                      {"lat", g_lat}};
  std::ofstream out(o.json);
  out << j.dump(1) << "\n";
  if (!out) {
    std::fprintf(stderr, "dpdat-engine-perf: cannot write %s\n", o.json.c_str());
    return 1;
  }
  return 0;
}

namespace {

void usage(const char* argv0) {
  std::fprintf(
      stderr,
      "usage: %s [--op write|read|send] [--size N | --all] [--iters N] [--lat | --bw]\n"
      "          [--pmtu 256..4096] [--tx-depth N (per posting thread)] [--window PKTS] [--gbn]\n"
      "          [--cc both|dcqcn|delay|off (both)]\n"
      "          [--progress inline|thread]\n"
      "       %s --server --vdev DEV,ARGS --ip A.B.C.D [--oob PATH] [--mtu N]\n"
      "       %s --client SERVER_IP --vdev DEV,ARGS --ip A.B.C.D [--oob PATH] [--mtu N]\n"
      "          [--verify] [--engines N [--qps M] [--threads]] [--rto-us N]\n"
      "       (--threads: the client runs a thread per engine, pinned to its CPUs in\n"
      "        order, that posts to, reaps and drives that engine alone)\n"
      "       (--loss P drops a fraction P of received frames, seeded: fault injection)\n"
      "       --json FILE writes every figure\n",
      argv0, argv0, argv0);
}

int run_main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows in logs as it happens
  Options o;
  bool all = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--op" && i + 1 < argc) {
      o.op = next();
    } else if (a == "--size" && i + 1 < argc) {
      o.sizes = {std::stoul(next())};
    } else if (a == "--all") {
      all = true;
    } else if (a == "--iters" && i + 1 < argc) {
      o.iters = std::stoull(next());
    } else if (a == "--lat") {
      o.lat = true;
    } else if (a == "--bw") {
      o.bw = true;
    } else if (a == "--pmtu" && i + 1 < argc) {
      o.pmtu = static_cast<uint32_t>(std::stoul(next()));
      o.pmtu_given = true;
    } else if (a == "--mtu" && i + 1 < argc) {
      o.mtu = static_cast<uint16_t>(std::stoul(next()));
    } else if (a == "--tx-depth" && i + 1 < argc) {
      o.tx_depth = static_cast<uint32_t>(std::stoul(next()));
    } else if (a == "--window" && i + 1 < argc) {
      o.window = static_cast<uint32_t>(std::stoul(next()));
    } else if (a == "--gbn") {
      o.gbn = true;
    } else if (a == "--cc" && i + 1 < argc) {
      const auto m = rc::parse_cc_mode(next());
      if (!m) {
        std::fprintf(stderr, "dpdat-engine-perf: --cc takes both, dcqcn, delay or off\n");
        return 2;
      }
      o.cc = *m;
    } else if (a == "--server") {
      o.server = true;
    } else if (a == "--client" && i + 1 < argc) {
      o.client_of = next();
    } else if (a == "--vdev" && i + 1 < argc) {
      o.vdev = next();
    } else if (a == "--ip" && i + 1 < argc) {
      o.ip = next();
    } else if (a == "--oob" && i + 1 < argc) {
      o.oob = next();
    } else if (a == "--verify") {
      o.verify = true;
    } else if (a == "--progress" && i + 1 < argc) {
      const std::string m = next();
      if (m != "inline" && m != "thread") {
        usage(argv[0]);
        return 2;
      }
      o.thread_progress = m == "thread";
    } else if (a == "--engines" && i + 1 < argc) {
      o.engines = static_cast<uint16_t>(std::stoul(next()));
    } else if (a == "--threads") {
      o.per_engine_threads = true;
    } else if (a == "--rto-us" && i + 1 < argc) {
      o.rto_us = std::stoull(next());
    } else if (a == "--qps" && i + 1 < argc) {
      o.qps = static_cast<uint16_t>(std::stoul(next()));
    } else if (a == "--json" && i + 1 < argc) {
      o.json = next();
    } else if (a == "--loss" && i + 1 < argc) {
      o.loss = std::stod(next());
    } else {
      usage(argv[0]);
      return 2;
    }
  }
  if (o.op != "write" && o.op != "read" && o.op != "send") {
    usage(argv[0]);
    return 2;
  }
  if (!o.lat && !o.bw) o.lat = o.bw = true;
  if (o.sizes.empty()) {
    if (all) {
      for (size_t s = 2; s <= (8u << 20); s *= 2) o.sizes.push_back(s);
    } else {
      o.sizes = {2, 64, 1024, 4096, 65536, 1u << 20};
    }
  }

  if (o.server || !o.client_of.empty()) return run_remote(o);
  if (o.engines != 1 || o.qps != 0) {
    std::fprintf(stderr, "dpdat-engine-perf: --engines and --qps apply across processes only\n");
    return 2;
  }
  return run_local(o);
}

}  // namespace

}  // namespace dpdat::engine_perf

int main(int argc, char** argv) {
  try {
    return dpdat::engine_perf::run_main(argc, argv);
  } catch (const std::exception& e) {  // std::stoul on a bad number
    std::fprintf(stderr, "dpdat-engine-perf: bad option value (%s)\n", e.what());
    return 2;
  }
}
