// Link sharing in generated LLM runs: 2-GPU nodes put both the data-parallel and the pipeline
// groups on the NICs, so the gradient reduce-scatters of --overlap-grad-reduce run beside the
// pipeline sends and receives. Sharing lengthens the iteration, --link-sharing off does not,
// and the folded simulation stays bit for bit the full one.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "io/input_file.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/topology_link_sharing.hpp"
#include "scenario/folded_simulation.hpp"
#include "support/same_rank_result.hpp"
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
  const std::string source = PERFSIM_SOURCE_DIR;
  const std::string device = source + "/configs/devices/H100-SXM.json";
  LlmScenario scenario{
      test_support::small_gpt(4, 1024, 8),
      parallel,
      topology::resized(topology::load_topology(source + "/configs/topologies/hgx-h100.json"), 4,
                        2),
      io::read_file_decompressed(device),
      device,
      ""};
  scenario.link_sharing = link_sharing;
  return scenario;
}

std::vector<RankResult> unfolded(const LlmScenario& scenario) {
  const SimulationInputs inputs = load_llm_inputs(scenario, {0, 1, 2, 3, 4, 5, 6, 7});
  engine::InProcessClockSync sync;
  return engine::simulate_programs(inputs.programs, inputs.overheads, sync);
}

double slowest_us(const std::vector<RankResult>& results) {
  double slowest = 0;
  for (const RankResult& result : results)
    slowest = std::max(slowest, result.iteration_us);
  return slowest;
}

TEST(LinkSharingLlm, OverlappedGradientReductionSlowsThePipelineTransfersSharingItsNic) {
  const std::vector<RankResult> shared = unfolded(dp_and_pp_on_the_nics(true));
  const std::vector<RankResult> alone = unfolded(dp_and_pp_on_the_nics(false));
  EXPECT_GT(slowest_us(shared), slowest_us(alone));
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
  const LlmScenario scenario = dp_and_pp_on_the_nics(true);
  const FoldedRun folded = fold_in_process(scenario, false);
  ASSERT_FALSE(folded.refusal) << *folded.refusal;
  const std::vector<RankResult> full = unfolded(scenario);
  ASSERT_EQ(folded.results.size(), full.size());
  for (std::size_t rank = 0; rank < full.size(); ++rank)
    test_support::expect_same_result(folded.results[rank], full[rank]);
}

}  // namespace
}  // namespace perfsim::scenario
