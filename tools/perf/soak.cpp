#include "soak.hpp"

#include <arpa/inet.h>

#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "churn.hpp"
#include "remote.hpp"
#include "sysinfo.hpp"

namespace dpdat::perf {

namespace {

constexpr std::array<const char*, 3> kOps = {"write", "read", "send"};
// How long a check may wait: a soak on a shared host may be starved for a
// while (bench/soak.sh gives the queue pairs as long: retry_time_ms).
constexpr uint64_t kStallNs = 60'000'000'000ull;
// A round longer than kSlowNs is reported; one longer than kRoundLimitNs
// fails the soak.
constexpr uint64_t kSlowNs = 20'000'000'000ull;
constexpr uint64_t kRoundLimitNs = 600'000'000'000ull;

bool complain(const std::string& what) {
  std::fprintf(stderr, "dpdat-perf: soak: %s\n", what.c_str());
  return false;
}

// After a READ round: QP k's landing slice holds the server's source
// pattern of this round's salt.
bool verify_read(Side& s, const Layout& L, size_t n, uint8_t salt, std::string* err) {
  for (size_t k = 0; k < L.qps; ++k) {
    const uint8_t* p = s.data() + L.landing(k);
    for (size_t i = 0; i < n; ++i)
      if (p[i] != pattern_byte(i, k, salt)) {
        *err = "verify: QP " + std::to_string(k) + " READ byte " + std::to_string(i) + " is " +
               std::to_string(p[i]) + ", the server's source holds " +
               std::to_string(pattern_byte(i, k, salt));
        return false;
      }
  }
  return true;
}

struct Interval {
  std::array<double, kOps.size()> bytes{}, secs{};
  uint64_t rounds = 0;
};

}  // namespace

bool soak_client(Side& s, tools::Oob& oob, const Layout& L, const DAT_RMR_TRIPLET& peer,
                 const Options& o, Run* run) {
  std::string err;
  sockaddr_in server{};
  server.sin_family = AF_INET;
  if (inet_pton(AF_INET, o.client_of.c_str(), &server.sin_addr) != 1) return complain("--client");
  ClientChurn churn(s, L, server, o.conn_qual, peer);
  std::string churn_err;
  bool churn_failed = false;
  const auto drive = [&] {
    if (!churn_failed && !churn.step(&churn_err)) churn_failed = true;
  };
  const size_t n = o.sizes.front();
  const uint64_t iters = bw_iters(o, n);
  std::printf("soak: %.0f s, a verified WRITE, READ and SEND round after another, %" PRIu64
              " x %zu B per EP on %u EP%s, %u churned connection%s; a line every %.0f s\n",
              o.soak, iters, n, o.qps, o.qps > 1 ? "s" : "", o.churn, o.churn == 1 ? "" : "s",
              o.interval);
  std::printf("soak  %4s %7s %8s %8s %8s %8s %7s %7s %12s %12s\n", "#", "end_s", "MB/s", "write",
              "read", "send", "rounds", "churn", "rss_kib", "peer_rss_kib");
  const uint64_t t0 = now_ns();
  const auto every = static_cast<uint64_t>(o.interval * 1e9);
  const uint64_t t_end = t0 + static_cast<uint64_t>(o.soak * 1e9);
  uint64_t t_line = t0, next_line = t0 + every, rounds = 0, lines = 0;
  double total_bytes = 0;
  Interval iv;
  Reply rep{};
  while (now_ns() < t_end) {
    for (size_t op = 0; op < kOps.size(); ++op) {
      Options ro = o;
      ro.op = kOps[op];
      ro.round_limit = static_cast<double>(kRoundLimitNs) / 1e9;
      const uint64_t r0 = now_ns();
      // New data every round (never 0: the server's default pattern).
      const auto salt = static_cast<uint8_t>(1 + rounds % 251);
      fill_pattern(s, L, n, static_cast<uint8_t>(salt ^ 0x80));
      for (size_t k = 0; k < L.qps; ++k) std::memset(s.data() + L.landing(k), 0, n);
      std::vector<Flow> flows;
      for (size_t k = 0; k < o.qps; ++k) flows.push_back(Flow{&s, k, peer});
      BwFigures f;
      const Cmd c{kCmdBw, op_code(ro.op), n, iters, 0, 0, salt};
      if (!run_round(
              oob, c, [&] { return run_bw(flows, ro, L, n, iters, drive, &f, &err); }, &rep, &err))
        return complain(std::string(kOps[op]) + " round " + std::to_string(rounds) + ": " + err);
      const bool ok = ro.op == "read" ? verify_read(s, L, n, salt, &err)
                                      : verify_slices(s, L, n, peer, drive, &err, kStallNs);
      if (!ok)
        return complain(std::string(kOps[op]) + " round " + std::to_string(rounds) + ": " + err);
      if (churn_failed) return complain(churn_err);
      if (const uint64_t took = now_ns() - r0; took > kSlowNs)
        std::printf("soak: %s round %" PRIu64 " took %.1f s (verified)\n", kOps[op], rounds,
                    static_cast<double>(took) / 1e9);
      iv.bytes[op] += static_cast<double>(f.iters * n);
      iv.secs[op] += f.secs;
      total_bytes += static_cast<double>(f.iters * n);
      ++iv.rounds;
      ++rounds;
    }
    const uint64_t now = now_ns();
    if (now >= next_line || now >= t_end) {
      double bytes = 0;
      std::array<double, kOps.size()> mbs{};
      for (size_t op = 0; op < kOps.size(); ++op) {
        bytes += iv.bytes[op];
        mbs[op] = iv.secs[op] > 0 ? iv.bytes[op] / iv.secs[op] / 1048576.0 : 0.0;
      }
      std::printf("soak  %4" PRIu64 " %7.0f %8.1f %8.1f %8.1f %8.1f %7" PRIu64 " %7" PRIu64
                  " %12" PRIu64 " %12" PRIu64 "\n",
                  ++lines, static_cast<double>(now - t0) / 1e9,
                  bytes / (static_cast<double>(now - t_line) / 1e9) / 1048576.0, mbs[0], mbs[1],
                  mbs[2], iv.rounds, churn.cycles(), rss_kib(), rep.rss_kib);
      iv = Interval{};
      t_line = now;
      while (next_line <= now) next_line += every;
    }
  }
  churn.stop();
  const uint64_t stop_by = now_ns() + 20'000'000'000ull;
  while (!churn.idle()) {
    drive();
    if (churn_failed) return complain(churn_err);
    if (now_ns() > stop_by) return complain("the churned connections did not close in 20 s");
  }
  const double secs = static_cast<double>(now_ns() - t0) / 1e9;
  std::printf("soak: passed: %" PRIu64 " rounds verified (%.1f GiB, %.1f MB/s), %" PRIu64
              " churn cycles verified (the server accepted %" PRIu64 "), %.0f s\n",
              rounds, total_bytes / 1073741824.0, total_bytes / secs / 1048576.0, churn.cycles(),
              rep.churn_accepted, secs);
  run->counters["soak.rounds"] = rounds;
  run->counters["soak.churn_cycles"] = churn.cycles();
  run->counters["soak.rss_kib"] = rss_kib();
  run->counters["peer.soak.rss_kib"] = rep.rss_kib;
  return true;
}

}  // namespace dpdat::perf
