// RttEstimator: RFC 6298 smoothing, floor and cap.
#include <gtest/gtest.h>

#include "rc/cc/congestion.hpp"

namespace {

using dpdat::rc::RttEstimator;

TEST(RttEstimator, InitialTimeoutUntilTheFirstSample) {
  RttEstimator e(1'000'000, 10'000, 1'000'000);
  EXPECT_FALSE(e.valid());
  EXPECT_EQ(e.rto_ns(), 1'000'000u);
}

TEST(RttEstimator, FirstSampleThenSmoothing) {
  RttEstimator e(1'000'000, 1'000, 1'000'000);
  e.sample(8'000);
  EXPECT_TRUE(e.valid());
  EXPECT_EQ(e.srtt_ns(), 8'000u);
  EXPECT_EQ(e.rttvar_ns(), 4'000u);
  EXPECT_EQ(e.rto_ns(), 8'000u + 4 * 4'000u);
  e.sample(16'000);  // err 8000: RTTVAR = (3*4000 + 8000)/4, SRTT = (7*8000 + 16000)/8
  EXPECT_EQ(e.rttvar_ns(), 5'000u);
  EXPECT_EQ(e.srtt_ns(), 9'000u);
  EXPECT_EQ(e.rto_ns(), 29'000u);
}

TEST(RttEstimator, SteadyRoundTripConvergesToTheFloor) {
  RttEstimator e(1'000'000, 50'000, 1'000'000);
  for (int i = 0; i < 100; ++i) e.sample(2'000);
  EXPECT_EQ(e.srtt_ns(), 2'000u);
  EXPECT_EQ(e.rto_ns(), 50'000u);
}

TEST(RttEstimator, CappedAtTheMaximum) {
  RttEstimator e(100'000, 10'000, 100'000);
  e.sample(5'000'000);
  EXPECT_EQ(e.rto_ns(), 100'000u);
}

}  // namespace
