// GPUs sharing one NIC in generated LLM runs: TP 2 x DP 8 on two nodes of 8 GPUs. Each DP group
// holds one GPU of every TP pair, 4 per node, on 4 distinct NICs whether the node has 8 NICs or
// 4 (GPUs 2i and 2i+1 behind NIC i), so the collective model prices its all-reduce alike on
// both; on 4 NICs the other TP rank's DP group reduces through the same NIC at the same moment,
// and with link sharing the gradient reduction takes longer. The folded run stays bit for bit
// the full one.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "support/every_rank_in_process.hpp"
#include "support/h100_sxm_scenario.hpp"
#include "support/small_gpt.hpp"

namespace perfsim::scenario {
namespace {

LlmScenario tp2_dp8(const std::string& topology_file, bool link_sharing) {
  generators::llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = 1;
  parallel.dp = 8;
  parallel.zero_stage = 1;
  return test_support::h100_sxm_scenario(
      test_support::small_gpt(4, 1024, 8), parallel,
      topology::load_topology(std::string(PERFSIM_SOURCE_DIR) + "/configs/topologies/" +
                              topology_file),
      link_sharing);
}

using test_support::simulate_every_rank;
using test_support::slowest_iteration_us;

double dp_time_us(const std::vector<RankResult>& results) {
  double total_us = 0;
  for (const RankResult& result : results) {
    for (const auto& [group, traffic] : result.groups) {
      if (group.starts_with("dp"))
        total_us += traffic.time_us;
    }
  }
  return total_us;
}

TEST(NicSharingLlm, DataParallelGroupsBehindSharedNicsReduceSlower) {
  const auto four_alone = simulate_every_rank(tp2_dp8("hgx-h100-4nic-2node.json", false));
  const auto eight_alone = simulate_every_rank(tp2_dp8("hgx-h100-2node.json", false));
  const auto four_shared = simulate_every_rank(tp2_dp8("hgx-h100-4nic-2node.json", true));
  const auto eight_shared = simulate_every_rank(tp2_dp8("hgx-h100-2node.json", true));
  ASSERT_GT(dp_time_us(eight_alone), 0.0);
  // Alone, each DP group crosses 4 NICs per node on both: the same cost.
  EXPECT_EQ(slowest_iteration_us(four_alone), slowest_iteration_us(eight_alone));
  EXPECT_EQ(dp_time_us(four_alone), dp_time_us(eight_alone));
  // One NIC per GPU: no copies, and this layout keeps one collective per link at a time (the
  // same but for rounding: latency + shared transfer is summed again).
  EXPECT_DOUBLE_EQ(slowest_iteration_us(eight_shared), slowest_iteration_us(eight_alone));
  // Two GPUs per NIC: the TP mate's copy doubles the bandwidth term of every DP collective.
  EXPECT_GT(dp_time_us(four_shared), dp_time_us(four_alone));
  EXPECT_GT(slowest_iteration_us(four_shared), slowest_iteration_us(four_alone));
  std::printf(
      "TP 2 x DP 8 iteration: 8 NICs %.2f us (sharing off) %.2f us (on); 4 NICs %.2f us "
      "(off) %.2f us (on); DP time summed over ranks, 4 NICs: %.1f -> %.1f us\n",
      slowest_iteration_us(eight_alone), slowest_iteration_us(eight_shared),
      slowest_iteration_us(four_alone), slowest_iteration_us(four_shared), dp_time_us(four_alone),
      dp_time_us(four_shared));
}

TEST(NicSharingLlm, FoldedRunIsBitIdenticalWithSharedNics) {
  test_support::expect_fold_matches_every_rank(tp2_dp8("hgx-h100-4nic-2node.json", true));
}

}  // namespace
}  // namespace perfsim::scenario
