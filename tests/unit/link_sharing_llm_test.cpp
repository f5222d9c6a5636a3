// Link sharing in generated LLM runs: 2-GPU nodes put both the data-parallel and the pipeline
// groups on the NICs, so the gradient reduce-scatters of --overlap-grad-reduce run beside the
// pipeline sends and receives. Sharing lengthens the iteration, --link-sharing off does not,
// and the folded simulation stays bit for bit the full one.
#include <gtest/gtest.h>

#include <string>

#include "mpi_sim/engine/topology_link_sharing.hpp"
#include "support/every_rank_in_process.hpp"
#include "support/h100_sxm_scenario.hpp"
#include "support/small_gpt.hpp"
#include "topology/node_resize.hpp"

namespace perfsim::scenario {
namespace {

LlmScenario dp_and_pp_on_the_nics(bool link_sharing) {
  generators::llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = 2;
  parallel.dp = 2;
  parallel.zero_stage = 1;
  parallel.overlap_grad_reduce = true;
  return test_support::h100_sxm_scenario(
      test_support::small_gpt(4, 1024, 8), parallel,
      topology::resized(topology::load_topology(std::string(PERFSIM_SOURCE_DIR) +
                                                "/configs/topologies/hgx-h100.json"),
                        4, 2),
      link_sharing);
}

using test_support::simulate_every_rank;
using test_support::slowest_iteration_us;

TEST(LinkSharingLlm, OverlappedGradientReductionSlowsThePipelineTransfersSharingItsNic) {
  const std::vector<RankResult> shared = simulate_every_rank(dp_and_pp_on_the_nics(true));
  const std::vector<RankResult> alone = simulate_every_rank(dp_and_pp_on_the_nics(false));
  EXPECT_GT(slowest_iteration_us(shared), slowest_iteration_us(alone));
  // Pipeline transfers last longer in all, summed over every rank's p2p groups.
  double shared_p2p_us = 0;
  double alone_p2p_us = 0;
  for (std::size_t rank = 0; rank < shared.size(); ++rank) {
    for (const auto& [group, traffic] : shared[rank].groups) {
      if (group.starts_with("p2p:")) {
        shared_p2p_us += traffic.time_us;
        alone_p2p_us += alone[rank].groups.at(group).time_us;
      }
    }
  }
  EXPECT_GT(shared_p2p_us, alone_p2p_us);
}

TEST(LinkSharingLlm, FoldedRunIsBitIdenticalWithSharing) {
  test_support::expect_fold_matches_every_rank(dp_and_pp_on_the_nics(true));
}

}  // namespace
}  // namespace perfsim::scenario
