// The default EAL arguments keep the placement the process was started with.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include "dpdk/eal.hpp"

namespace {

using dpdat::dpdk::affinity_cpu_list;
using dpdat::dpdk::eal_default_args;

TEST(EalArgs, MainLcoreBoundToInheritedAffinity) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  size_t last = CPU_SETSIZE;
  for (size_t c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all)) last = c;
  ASSERT_LT(last, size_t{CPU_SETSIZE});
  // A thread of its own, so the test binary's main thread keeps its mask.
  std::string list, lcores;
  bool env_set = false;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return;
    list = affinity_cpu_list();
    const char* env = std::getenv("DPDAT_EAL_ARGS");
    env_set = env != nullptr && *env != '\0';
    bool huge = false;
    const auto args = eal_default_args(&huge);
    const auto it = std::find(args.begin(), args.end(), "--lcores");
    if (it != args.end() && it + 1 != args.end()) lcores = *(it + 1);
  });
  t.join();
  EXPECT_EQ(list, std::to_string(last));
  if (!env_set) {
    EXPECT_EQ(lcores, "0@(" + std::to_string(last) + ")");
  }
}

TEST(EalArgs, CpuListCompressesRuns) {
  std::string list;
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  const int n = CPU_COUNT(&all);
  list = affinity_cpu_list();
  ASSERT_FALSE(list.empty());
  // Every allowed CPU appears in the list once it is expanded.
  int counted = 0;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    const std::string part = list.substr(pos, end - pos);
    const size_t dash = part.find('-');
    const size_t a = std::stoul(part.substr(0, dash));
    const size_t b = dash == std::string::npos ? a : std::stoul(part.substr(dash + 1));
    ASSERT_LE(a, b);
    for (size_t c = a; c <= b; ++c) {
      EXPECT_TRUE(CPU_ISSET(c, &all)) << c;
      ++counted;
    }
    pos = end + 1;
  }
  EXPECT_EQ(counted, n);
  if (n > 1 && CPU_ISSET(0, &all) && CPU_ISSET(1, &all)) {
    EXPECT_NE(list.find('-'), std::string::npos);
  }
}

}  // namespace
