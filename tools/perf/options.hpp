#pragma once
// dpdat-perf's command line (CLI11): perftest's option names where they
// apply to the DAT API, dpdat's names for the link.

#include <cstdint>
#include <string>
#include <vector>

namespace dpdat::perf {

struct Options {
  std::string op = "write";  // write | read | send | atomic-fadd | atomic-cswap
  std::vector<uint64_t> sizes;
  uint64_t iters = 0;     // per QP; 0: chosen from the size
  double duration = 0.0;  // -D seconds; 0: run by iterations
  uint32_t qps = 1;
  bool bidirectional = false;
  uint32_t tx_depth = 128;   // WRs in flight per EP
  uint32_t post_list = 0;    // WRs posted per EP before completions are reaped; 0: up to tx_depth
  uint32_t cq_mod = 16;      // every cq_mod-th WR asks for a completion event
  uint32_t inline_size = 0;  // perftest's --inline-size: dpdat has none (0 only)
  bool report_gbits = false;
  bool lat = false;
  bool bw = false;
  std::string histogram;  // "-": print; else a file (CSV of samples' distribution)
  std::string json, csv;
  std::string progress;   // "": the interface's default
  uint32_t engines = 0;   // engines per interface (engines=); 0: the interface's own
  std::string cpus;       // their CPUs (cpus=)
  uint32_t threads = 1;   // bandwidth across processes: posting threads (EP k on thread k % T)
  std::string ia_params;  // more interface keys ("k=v;k=v"), appended to each IA's
  bool poll_mem = false;  // latency WRITE: poll the byte only, no EVD dequeue while waiting
  // Across processes.
  bool server = false;
  std::string client_of;  // the server's IPv4 address
  std::string vdev;
  std::string ip;
  std::string oob = "/tmp/dpdat-perf.sock";
  uint32_t mtu = 0;   // 0: the interface's default
  uint32_t pmtu = 0;  // 0: the largest the MTU allows
  bool verify = false;
  double linger = 0;                // client: stay connected and idle this long after the tests
  double soak = 0;                  // seconds of the soak run (0: no soak)
  double interval = 60;             // soak: seconds between report lines
  uint32_t churn = 0;               // soak: connections opened and closed in a loop beside
  double round_limit = 120;         // seconds a bandwidth round may take (not an option)
  uint32_t conn_qual = 0x50455246;  // "PERF"
  // In one process: the two IA names.
  std::string ia_a = "dpdat0";
  std::string ia_b = "dpdat1";
  std::vector<std::string> argv;  // as given, for the report

  bool remote() const { return server || !client_of.empty(); }
  // The IB extensions' atomics: DAT 2.0 only (dpdat-perf-dat2), 8 bytes.
  bool atomic() const { return op.rfind("atomic-", 0) == 0; }
  // WRITE and SEND latency is half a ping-pong; READ and atomics one round trip.
  bool half_round_trip() const { return op == "write" || op == "send"; }
};

// Parses argv.  Returns -1 to go on, or the exit status (0 after --help; 2
// after a one-line error on stderr naming the option at fault).
int parse_options(int argc, char** argv, Options* o);

}  // namespace dpdat::perf
