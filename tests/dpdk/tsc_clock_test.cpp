// The TSC clock the poll loops read (tools, dat_core): anchored to
// steady_clock, monotonic, and running at steady_clock's rate.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "dpdk/eal.hpp"
#include "dpdk/tsc_clock.hpp"

namespace {

using dpdat::dpdk::steady_now_ns;
using dpdat::dpdk::TscClock;

TEST(TscClock, AnchoredMonotonicAndAtSteadyRate) {
  ASSERT_TRUE(dpdat::dpdk::eal_init().ok) << dpdat::dpdk::eal_init().error;
  const TscClock clock;
  ASSERT_TRUE(clock.uses_tsc()) << "the EAL knows no TSC rate";
  // Anchored: a reading lies between two steady_clock readings around it,
  // up to the anchoring's own uncertainty (the tightest of its tries, which
  // a loaded or sanitised run can stretch to microseconds): 50 us of slack.
  const uint64_t s0 = steady_now_ns();
  const uint64_t t0 = clock.now();
  const uint64_t s1 = steady_now_ns();
  EXPECT_GE(t0 + 50'000, s0);
  EXPECT_LE(t0, s1 + 50'000);
  // Monotonic over many reads.
  uint64_t prev = clock.now();
  for (int i = 0; i < 100000; ++i) {
    const uint64_t t = clock.now();
    ASSERT_GE(t, prev);
    prev = t;
  }
  // Same rate: over 50 ms, the two clocks' elapsed times agree to well
  // within 2 % (a scheduling gap between the paired reads adds to both).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const uint64_t s2 = steady_now_ns();
  const uint64_t t2 = clock.now();
  const uint64_t s3 = steady_now_ns();
  const double steady_lo = static_cast<double>(s2 - s1), steady_hi = static_cast<double>(s3 - s0);
  const double tsc = static_cast<double>(t2 - t0);
  EXPECT_GE(tsc, steady_lo * 0.98);
  EXPECT_LE(tsc, steady_hi * 1.02);
}

}  // namespace
