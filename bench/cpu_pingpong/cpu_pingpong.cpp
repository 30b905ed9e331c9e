// dpdat-cpu-pingpong CPU_A CPU_B: the round trip of one cache line between
// two CPUs (a store on one, seen by a load spinning on the other, and back),
// median of --rounds rounds of --trips round trips, in ns.  A benchmark
// that runs its two sides on these CPUs is only as fast as moving its
// queues' lines between them: on a VM whose virtual CPUs the host places on
// cores that share a last-level cache sometimes and on cores that do not at
// other times, this figure tells the two apart (bench/loss_api.sh records it
// after every run).

#include <pthread.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<size_t>(cpu), &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

struct alignas(64) Line {
  std::atomic<uint64_t> v{0};
};

// `trips` round trips from `a` to `b` and back; ns per round trip.
double one_round(Line& line, int a, int b, uint64_t trips, bool* pinned) {
  line.v.store(0, std::memory_order_relaxed);
  std::atomic<int> ready{0};
  bool pinned_b = true;
  std::thread peer([&] {
    pinned_b = pin(b);
    ready.fetch_add(1, std::memory_order_acq_rel);
    while (ready.load(std::memory_order_acquire) != 2) {
    }
    for (uint64_t i = 1; i < 2 * trips; i += 2) {
      while (line.v.load(std::memory_order_acquire) != i) {
      }
      line.v.store(i + 1, std::memory_order_release);
    }
  });
  const bool pinned_a = pin(a);
  ready.fetch_add(1, std::memory_order_acq_rel);
  while (ready.load(std::memory_order_acquire) != 2) {
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < 2 * trips; i += 2) {
    line.v.store(i + 1, std::memory_order_release);
    while (line.v.load(std::memory_order_acquire) != i + 2) {
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  peer.join();
  *pinned = pinned_a && pinned_b;
  return static_cast<double>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) /
         static_cast<double>(trips);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Round trip of one cache line between two CPUs (ns, median of the rounds)"};
  int a = 0, b = 1;
  uint64_t trips = 100000;
  unsigned rounds = 5;
  app.add_option("cpu_a", a, "first CPU")->required()->check(CLI::Range(0, CPU_SETSIZE - 1));
  app.add_option("cpu_b", b, "second CPU")->required()->check(CLI::Range(0, CPU_SETSIZE - 1));
  app.add_option("--trips", trips, "round trips per round")->check(CLI::Range(1, 100'000'000));
  app.add_option("--rounds", rounds, "rounds")->check(CLI::Range(1, 1000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (a == b) {
    std::fprintf(stderr, "dpdat-cpu-pingpong: the two CPUs must differ\n");
    return 2;
  }
  Line line;
  std::vector<double> ns;
  for (unsigned r = 0; r < rounds; ++r) {
    bool pinned = false;
    ns.push_back(one_round(line, a, b, trips, &pinned));
    if (!pinned) {
      std::fprintf(stderr, "dpdat-cpu-pingpong: cannot run on CPUs %d and %d\n", a, b);
      return 2;
    }
  }
  const auto mid = ns.begin() + static_cast<std::ptrdiff_t>(ns.size() / 2);
  std::nth_element(ns.begin(), mid, ns.end());
  std::printf("%.0f\n", *mid);
  return 0;
}
