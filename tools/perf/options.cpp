#include "options.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

namespace dpdat::perf {

namespace {

// The same sources build both programs; each names itself in --help and in a
// command-line error.
#ifdef DPDAT_PERF_DAT2
constexpr const char* kProg = "dpdat-perf-dat2";
constexpr const char* kAbout =
    "dpdat-perf-dat2: dpdat-perf over DAT 2.0 (OFED's libdat2 loading dpdat's plug-in),\n"
    "with the IB extensions' atomics; dpdat-perf starts it for --op atomic-*.\n";
#else
constexpr const char* kProg = "dpdat-perf";
constexpr const char* kAbout =
    "dpdat-perf: perftest-style bandwidth and latency over the uDAPL 1.2 API (libdat);\n"
    "the atomics run over DAT 2.0 (libdat2 and dpdat's plug-in, IB extensions) in\n"
    "dpdat-perf-dat2, which dpdat-perf starts for them.\n";
#endif

bool parse_ipv4(const std::string& s) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  char tail = 0;
  return std::sscanf(s.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a < 256 &&
         b < 256 && c < 256 && d < 256;
}

// Cross-option rules CLI11 cannot state.  Empty when the options agree.
std::string check(const Options& o) {
  if (o.remote() && (o.vdev.empty() || o.ip.empty()))
    return "--server/--client need --vdev and --ip";
  if (o.server && !o.client_of.empty()) return "--server and --client exclude each other";
  if (!o.client_of.empty() && !parse_ipv4(o.client_of))
    return "--client: not an IPv4 address: " + o.client_of;
  if (!o.ip.empty() && !parse_ipv4(o.ip)) return "--ip: not an IPv4 address: " + o.ip;
  if (o.vdev.find(';') != std::string::npos) return "--vdev: ';' separates config keys";
  if (o.iters != 0 && o.duration > 0) return "--iters and --duration exclude each other";
  if (o.soak > 0) {
    if (!o.remote()) return "--soak runs across processes (--server/--client)";
    if (o.bidirectional || o.lat || o.atomic() || o.duration > 0 || o.linger > 0)
      return "--soak excludes --bidirectional, --lat, --duration, --linger and the atomics";
    if (o.sizes.size() > 1) return "--soak: one --size";
  } else if (o.churn != 0) {
    return "--churn goes with --soak";
  }
  if (o.lat && o.bidirectional) return "--bidirectional applies to bandwidth tests";
  if (o.remote() && o.bidirectional && o.progress == "inline")
    return "--bidirectional with --progress inline across processes: each side waits for the "
           "other's report over the out-of-band socket without driving its interface, so the "
           "peer's transfers time out; use adaptive or busy progress";
  for (uint64_t s : o.sizes) {
    if (s == 0) return "--size: must be at least 1";
    if (o.atomic() && s != 8) return "--size: atomics move 8 bytes";
  }
  if (o.inline_size != 0)
    return "--inline-size: dpdat has no inline sends to map it to (neither the DAT API nor "
           "the engine copies a payload at post time; the buffer is the consumer's until the "
           "completion); only 0 is accepted";
  return {};
}

}  // namespace

int parse_options(int argc, char** argv, Options* o) {
  for (int i = 0; i < argc; ++i) o->argv.emplace_back(argv[i]);
  CLI::App app{std::string(kAbout) +
                   "Default: client and server in one process over the built-in in-process "
                   "link\n(IAs dpdat0 and dpdat1), RDMA WRITE bandwidth 2 B .. 1 MiB and 8 B "
                   "latency.",
               kProg};
  app.get_formatter()->column_width(34);
  bool all = false;
  app.add_option("--op", o->op, "operation")
      ->check(CLI::IsMember({"write", "read", "send", "atomic-fadd", "atomic-cswap"}))
      ->capture_default_str();
  app.add_flag("-a,--all", all, "every size 2 B .. 8 MiB");
  app.add_option("-s,--size", o->sizes, "message size(s) in bytes")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  app.add_option("-n,--iters", o->iters, "iterations per QP (default: by size)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("-D,--duration", o->duration,
                 "run each bandwidth size for SECONDS after a warm-up margin")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("-q,--qps", o->qps, "connected EPs (queue pairs)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app.add_flag("-b,--bidirectional", o->bidirectional, "both sides send at once (bandwidth)");
  app.add_option("-t,--tx-depth", o->tx_depth, "WRs in flight per EP")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  app.add_option("-l,--post-list", o->post_list,
                 "WRs posted back to back per EP before completions are reaped (0: until "
                 "tx-depth WRs are in flight, as perftest's loop)")
      ->check(CLI::Range(0u, 4096u))
      ->capture_default_str();
  app.add_option("-Q,--cq-mod", o->cq_mod, "one completion event every N WRs")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  app.add_option("--inline-size", o->inline_size,
                 "perftest's inline threshold: dpdat has no inline sends, only 0 is accepted")
      ->capture_default_str();
  app.add_flag("--report-gbits", o->report_gbits, "bandwidth in Gb/s instead of MB/s (2^20 B)");
  app.add_flag("--lat", o->lat, "latency only");
  app.add_flag("--bw", o->bw, "bandwidth only");
  app.add_option("--histogram", o->histogram,
                 "latency distribution: '-' prints it, else CSV written to FILE");
  app.add_option("--json", o->json, "write every figure and the configuration as JSON");
  app.add_option("--csv", o->csv, "write one CSV row per measurement");
  app.add_option("--progress", o->progress,
                 "passive-side progress of the IAs (config key progress=)")
      ->check(CLI::IsMember({"busy", "adaptive", "inline", "thread"}));
  app.add_option("--engines", o->engines,
                 "protocol engines per interface (config key engines=); -q EPs are spread "
                 "over them")
      ->check(CLI::Range(1, 16));
  app.add_option("--cpus", o->cpus,
                 "CPUs of the engines' progress threads, e.g. 2-5 (config key cpus=)");
  app.add_option("--threads", o->threads,
                 "bandwidth across processes, active side: post and reap from N threads, EP k "
                 "on thread k % N, thread t pinned to the t-th --cpus CPU (with --progress "
                 "inline, each thread drives its engines itself: one core per engine, run to "
                 "completion)")
      ->check(CLI::Range(1, 64));
  app.add_option("--ia-params", o->ia_params,
                 "more interface keys for both IAs, e.g. \"loss=0.01;gbn=1;cc=off\" "
                 "(keys: dpdat.conf(5); a later key wins)");
  app.add_flag("--poll-memory", o->poll_mem,
               "WRITE latency: wait by polling the byte only (no dat_evd_dequeue meanwhile; "
               "the progress thread must serve); ignored with --progress inline");
  app.add_flag("--server", o->server, "cross-process: passive side");
  app.add_option("--client", o->client_of, "cross-process: active side, server's IPv4 address");
  app.add_option("--vdev", o->vdev, "DPDK device of this side (cross-process)");
  app.add_option("--ip", o->ip, "this side's IPv4 address (cross-process)");
  app.add_option("--oob", o->oob, "Unix socket for the out-of-band exchange")
      ->capture_default_str();
  app.add_option("--mtu", o->mtu, "port MTU asked of the PMD")->check(CLI::Range(256u, 9216u));
  app.add_option(
         "--pmtu", o->pmtu,
         "RoCE path MTU; refused when the port's MTU cannot carry it (default: the largest it can)")
      ->check(CLI::IsMember({256u, 512u, 1024u, 2048u, 4096u}));
  app.add_flag("--verify", o->verify,
               "read each WRITE/SEND back and compare (bandwidth; atomics: always)");
  app.add_option("--linger", o->linger,
                 "client: after the tests stay connected, calling nothing, for SECONDS "
                 "(idle CPU measurements)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--soak", o->soak,
                 "cross-process: for SECONDS cycle verified WRITE, READ and SEND rounds "
                 "(-n messages of one -s size per EP, new data each round), reporting "
                 "throughput and both sides' resident memory every --interval; fails on "
                 "any mismatch")
      ->check(CLI::Range(1.0, 7.0 * 86400));
  app.add_option("--interval", o->interval, "soak: SECONDS between report lines")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  app.add_option("--churn", o->churn,
                 "soak: connections beside the -q ones that connect, WRITE 4 KiB, read it "
                 "back and compare, disconnect and are freed, in a loop (both sides: same value)")
      ->check(CLI::Range(0u, 16u))
      ->capture_default_str();
  app.add_option("--ia", o->ia_a, "in one process: the active side's IA name")
      ->capture_default_str();
  app.add_option("--peer-ia", o->ia_b, "in one process: the passive side's IA name")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::printf("%s", app.help("", CLI::AppFormatMode::All).c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n') c = ' ';
    std::fprintf(stderr, "%s: %s\n", kProg, what.c_str());
    return 2;
  }
  // --engines / --cpus are interface keys: they travel with --ia-params (a
  // key given there as well wins, coming later).
  {
    std::string keys;
    if (o->engines != 0) keys += "engines=" + std::to_string(o->engines);
    if (!o->cpus.empty()) keys += (keys.empty() ? "" : ";") + std::string("cpus=") + o->cpus;
    if (!keys.empty()) o->ia_params = o->ia_params.empty() ? keys : keys + ";" + o->ia_params;
  }
  if (const std::string err = check(*o); !err.empty()) {
    std::fprintf(stderr, "%s: %s\n", kProg, err.c_str());
    return 2;
  }
  if (!o->lat && !o->bw) o->lat = o->bw = true;
  if (o->soak > 0) o->lat = false;
  if (o->atomic() && all) {
    std::fprintf(stderr, "%s: --all: atomics move 8 bytes\n", kProg);
    return 2;
  }
  if (o->sizes.empty()) {
    if (o->soak > 0) {
      o->sizes = {65536};
    } else if (o->atomic()) {
      o->sizes = {8};
    } else if (all) {
      for (uint64_t s = 2; s <= (8u << 20); s *= 2) o->sizes.push_back(s);
    } else {
      o->sizes = {2, 64, 1024, 4096, 65536, 1u << 20};
    }
  }
  return -1;
}

}  // namespace dpdat::perf
