// Ranks with identical results collapse into classes listed in numeric rank order (issue 19:
// "0, 1, 10, 11" string order), and the detail tables stay one row per class and per group
// kind however many ranks and point-to-point pairs there are.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/detail_tables.hpp"
#include "report/rank_classes.hpp"

namespace perfsim::report {
namespace {

RankResult rank_with(int rank, double iteration_us) {
  RankResult result;
  result.sim_rank = rank;
  result.iteration_us = iteration_us;
  return result;
}

TEST(ReportRankClasses, IdenticalRanksCollapseInNumericOrder) {
  std::vector<RankResult> results;
  for (int rank : {10, 2, 1, 0, 11, 3})
    results.push_back(rank_with(rank, rank % 2 == 0 ? 100.0 : 200.0));
  const std::vector<RankClass> classes = rank_classes(results);
  ASSERT_EQ(classes.size(), 2u);
  EXPECT_EQ(classes[0].ranks, (std::vector<int>{0, 2, 10}));
  EXPECT_EQ(classes[1].ranks, (std::vector<int>{1, 3, 11}));
  EXPECT_EQ(classes[0].representative->sim_rank, 0);
}

TEST(ReportRankClasses, RankListsAsRanges) {
  EXPECT_EQ(format_rank_list({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(format_rank_list({32, 33, 34, 35, 36, 37, 38, 39, 48, 49, 50, 56}), "32-39, 48-50, 56");
  EXPECT_EQ(format_rank_list({0, 2, 4, 6, 8}, 2), "0, 2 and 3 more ranges");
}

TEST(ReportRankClasses, TablesStayShortAtScale) {
  std::vector<RankResult> results;
  for (int rank = 0; rank < 2048; ++rank) {
    RankResult result = rank_with(rank, 1000.0 + rank % 4);  // four pipeline-stage classes
    result.groups["p2p:" + std::to_string(rank) + "->" + std::to_string((rank + 512) % 2048)]
        .exposed_us = 5;
    result.groups["tp/" + std::to_string(rank / 8)].exposed_us = 7;
    results.push_back(result);
  }
  const std::string ranks = format_rank_table(results);
  EXPECT_NE(ranks.find("4 classes of 2048 ranks"), std::string::npos) << ranks;
  EXPECT_LE(std::count(ranks.begin(), ranks.end(), '\n'), 6);
  const std::string groups = format_group_table(results, group_kind);
  EXPECT_EQ(std::count(groups.begin(), groups.end(), '\n'), 4) << groups;  // title, header, 2
  EXPECT_NE(groups.find("pipeline p2p"), std::string::npos) << groups;
  EXPECT_NE(groups.find("tensor-parallel"), std::string::npos) << groups;
}

TEST(ReportRankClasses, ManyClassesKeepTheSlowest) {
  std::vector<RankResult> results;
  for (int rank = 0; rank < 100; ++rank)
    results.push_back(rank_with(rank, 1000.0 + rank));
  const std::string table = format_rank_table(results, 10);
  EXPECT_NE(table.find("\n99 "), std::string::npos) << table;
  EXPECT_EQ(table.find("\n0 "), std::string::npos) << table;
  EXPECT_NE(table.find("90 faster classes not shown"), std::string::npos) << table;
}

}  // namespace
}  // namespace perfsim::report
