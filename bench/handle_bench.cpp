// The handle check every DAT call makes, by threads checking their own
// handles at once: the registry's set (dat_core/handle_set.hpp) beside the
// process-wide reader-writer lock and hash set it replaced, kept here only
// as the reference.  Run: build/<preset>/bench/handle_bench
//   (ratios between rows of one run; threads go up to the CPU count, where
//   the lock's shared cache line shows its cost).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "dat_core/handle_set.hpp"

namespace {

constexpr size_t kObjects = 4096;  // live handles in the process

struct Objects {
  std::vector<std::unique_ptr<uint64_t[]>> blocks;
  Objects() {
    for (size_t i = 0; i < kObjects; ++i) blocks.push_back(std::make_unique<uint64_t[]>(8));
  }
  const void* at(size_t i) const { return blocks[i % blocks.size()].get(); }
};
const Objects& objects() {
  static const Objects o;
  return o;
}

dpdat::dat::HandleSet& handle_set() {
  static auto* s = [] {
    auto* set = new dpdat::dat::HandleSet();
    for (size_t i = 0; i < kObjects; ++i) set->insert(objects().at(i));
    return set;
  }();
  return *s;
}

struct LockedSet {
  std::shared_mutex mu;
  std::unordered_set<const void*> set;
  bool contains(const void* p) {
    std::shared_lock lk(mu);
    return set.count(p) != 0;
  }
};
LockedSet& locked_set() {
  static auto* s = [] {
    auto* set = new LockedSet();
    for (size_t i = 0; i < kObjects; ++i) set->set.insert(objects().at(i));
    return set;
  }();
  return *s;
}

// Each thread checks its own 16 handles over and over, as a thread posting
// on its own endpoints does.
template <typename Check>
void run(benchmark::State& state, Check check) {
  const size_t base = static_cast<size_t>(state.thread_index()) * 16;
  size_t i = 0, found = 0;
  for (auto _ : state) {
    found += check(objects().at(base + (i++ & 15))) ? 1u : 0u;
  }
  if (found != static_cast<size_t>(state.iterations()))
    state.SkipWithError("a live handle was refused");
  state.SetItemsProcessed(state.iterations());
}

void BM_HandleCheck_Set(benchmark::State& state) {
  auto& s = handle_set();
  run(state, [&](const void* p) { return s.contains(p); });
}
void BM_HandleCheck_RwLock(benchmark::State& state) {
  auto& s = locked_set();
  run(state, [&](const void* p) { return s.contains(p); });
}

// 1, 2, 4, ... threads up to the CPUs this machine has.
int cpus() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }
BENCHMARK(BM_HandleCheck_Set)->ThreadRange(1, cpus())->UseRealTime();
BENCHMARK(BM_HandleCheck_RwLock)->ThreadRange(1, cpus())->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
