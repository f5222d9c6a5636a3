// The text summary lists ranks and process groups in numeric order (issue 19: "0, 1, 10, 11"
// string order), whatever order the processes gathered the results in.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "results/run_summary.hpp"

namespace perfsim::results {
namespace {

TEST(RunSummaryOrder, RanksAndGroupsInNumericOrder) {
  std::vector<RankResult> results;
  for (int rank : {10, 2, 1, 0}) {
    RankResult result;
    result.sim_rank = rank;
    result.iteration_us = 100;
    result.groups["dp/" + std::to_string(rank)].collectives = 1;
    results.push_back(result);
  }
  const std::string text = format_summary(results, {});
  auto position = [&](const std::string& needle) {
    const auto found = text.find(needle);
    EXPECT_NE(found, std::string::npos) << needle;
    return found;
  };
  EXPECT_LT(position("\n          1 "), position("\n          2 "));
  EXPECT_LT(position("\n          2 "), position("\n         10 "));
  EXPECT_LT(position("dp/2 "), position("dp/10 "));
  EXPECT_LT(position("dp/1 "), position("dp/2 "));
}

}  // namespace
}  // namespace perfsim::results
