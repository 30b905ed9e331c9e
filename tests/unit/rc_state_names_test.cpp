// The queue pair's role state machines name every state once (trace output
// must tell the states apart).

#include <gtest/gtest.h>

#include <set>
#include <string_view>

#include "rc/qp/qp.hpp"

namespace {

using dpdat::rc::Qp;

template <typename State>
void expect_distinct_names() {
  std::set<std::string_view> seen;
  for (size_t i = 0; i < static_cast<size_t>(State::kCount); ++i) {
    const std::string_view n = Qp::state_name(static_cast<State>(i));
    EXPECT_FALSE(n.empty());
    EXPECT_NE(n, "invalid") << i;
    EXPECT_TRUE(seen.insert(n).second) << "duplicate name " << n;
  }
  EXPECT_EQ(Qp::state_name(State::kCount), "invalid");
}

TEST(RcStateNames, RequesterStatesHaveDistinctNames) { expect_distinct_names<Qp::ReqState>(); }
TEST(RcStateNames, ResponderStatesHaveDistinctNames) { expect_distinct_names<Qp::RespState>(); }
TEST(RcStateNames, CompleterStatesHaveDistinctNames) { expect_distinct_names<Qp::CompState>(); }

}  // namespace
