// The planner simulates one representative rank per pipeline stage with SymmetricClockSync
// (mpi_sim/engine/symmetric_clock_sync.hpp). These tests run the same 16-rank layouts both ways
// and require the same iteration time and the same exposed communication per group kind, and
// check that the search's lower bound never exceeds the simulated time.
#include <gtest/gtest.h>

#include <string>

#include "scenario/plan_simulation.hpp"
#include "support/dgx_a100_scenario.hpp"
#include "support/small_gpt.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

llm::TransformerConfig small_gpt() {
  llm::TransformerConfig model = test_support::small_gpt(6, 1024, 24);
  model.attention = llm::AttentionKernel::kUnfused;
  model.dropout = true;
  return model;
}

LlmScenario scenario_of(const llm::ParallelConfig& parallel) {
  return test_support::dgx_a100_scenario(small_gpt(), parallel, 2);
}

void expect_symmetric_matches_full(const llm::ParallelConfig& parallel) {
  const LlmScenario scenario = scenario_of(parallel);
  const LayoutSimulation full = simulate_layout(scenario, SimulatedRanks::kAll);
  const LayoutSimulation symmetric =
      simulate_layout(scenario, SimulatedRanks::kPipelineRepresentatives);
  ASSERT_EQ(full.results.size(), static_cast<std::size_t>(parallel.world_size()));
  ASSERT_EQ(symmetric.results.size(), static_cast<std::size_t>(parallel.pp));
  EXPECT_GT(full.summary.iteration_us, 0);
  EXPECT_NEAR(symmetric.summary.iteration_us, full.summary.iteration_us,
              1e-9 * full.summary.iteration_us);
  EXPECT_NEAR(symmetric.summary.mfu, full.summary.mfu, 1e-9);
  ASSERT_EQ(symmetric.summary.exposed_us_by_kind.size(), full.summary.exposed_us_by_kind.size());
  for (const auto& [kind, exposed_us] : full.summary.exposed_us_by_kind) {
    EXPECT_NEAR(symmetric.summary.exposed_us_by_kind.at(kind), exposed_us, 1e-6 + 1e-9 * exposed_us)
        << kind;
    EXPECT_NEAR(symmetric.summary.comm_us_by_kind.at(kind), full.summary.comm_us_by_kind.at(kind),
                1e-6)
        << kind;
  }
  // Each representative equals the full run's rank of the same number.
  for (const RankResult& representative : symmetric.results) {
    EXPECT_DOUBLE_EQ(representative.iteration_us,
                     full.results.at(representative.sim_rank).iteration_us)
        << "rank " << representative.sim_rank;
  }
  // The planner's bound stays at or below the simulated time (it counts layer work only, so
  // communication-bound layouts such as ZeRO 3 on this small model are far above it).
  const double bound_us = iteration_lower_bound_us(scenario);
  EXPECT_LE(bound_us, full.summary.iteration_us);
  EXPECT_GT(bound_us, 0.3 * full.summary.iteration_us);
}

TEST(SymmetricSimulation, Tp2Pp2Dp4MatchesFullSimulation) {
  llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = 2;
  parallel.dp = 4;
  expect_symmetric_matches_full(parallel);
}

TEST(SymmetricSimulation, SequenceParallelZero1SelectiveRecomputeMatchesFullSimulation) {
  llm::ParallelConfig parallel;
  parallel.tp = 4;
  parallel.pp = 2;
  parallel.dp = 2;
  parallel.sequence_parallel = true;
  parallel.zero_stage = 1;
  parallel.recompute = llm::Recompute::kSelective;
  expect_symmetric_matches_full(parallel);
}

TEST(SymmetricSimulation, UserbufferTensorParallelOverlapMatchesFullSimulation) {
  // The ring exchange's peers are not simulated: their sends mirror the representative's.
  llm::ParallelConfig parallel;
  parallel.tp = 4;
  parallel.pp = 2;
  parallel.dp = 2;
  parallel.sequence_parallel = true;
  parallel.tp_comm_overlap = true;
  expect_symmetric_matches_full(parallel);
}

TEST(SymmetricSimulation, InterleavedPipelineZero3MatchesFullSimulation) {
  llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = 3;
  parallel.dp = 2;
  parallel.virtual_stages = 2;
  parallel.zero_stage = 3;
  expect_symmetric_matches_full(parallel);
}

TEST(SymmetricSimulation, RepresentativesAreTheFirstRankOfEachStage) {
  llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = 3;
  parallel.dp = 4;
  // rank = tp + TP (dp + DP pp)
  EXPECT_EQ(pipeline_representatives(parallel), (std::vector<int>{0, 8, 16}));
}

}  // namespace
}  // namespace perfsim::scenario
