// MoE layouts through the engine: the planner's one-rank-per-stage simulation must match the
// full simulation with expert-parallel all-to-alls, and Mixtral 8x7B with EP 8 simulates on 64
// GPUs (a prediction: no measured MoE run exists to validate it against).
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "generators/llm/llm_model_config.hpp"
#include "scenario/plan_simulation.hpp"
#include "support/h100_sxm_scenario.hpp"
#include "support/small_moe.hpp"
#include "topology/topology.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

const std::string kSource = PERFSIM_SOURCE_DIR;

// The shipped H100-SXM device and the named topology, link sharing on (the default).
LlmScenario h100_scenario(llm::TransformerConfig model, const llm::ParallelConfig& parallel,
                          const std::string& topology) {
  return test_support::h100_sxm_scenario(
      std::move(model), parallel,
      topology::load_topology(kSource + "/configs/topologies/" + topology), true);
}

double exposed(const LlmRunSummary& summary, const std::string& kind) {
  const auto found = summary.exposed_us_by_kind.find(kind);
  return found == summary.exposed_us_by_kind.end() ? 0.0 : found->second;
}

TEST(LlmMoeSimulation, PipelineRepresentativesMatchEveryRank) {
  llm::TransformerConfig model = test_support::small_moe(4, 16);
  model.moe.shared_expert_ffn_hidden = 1024;
  const llm::ParallelConfig parallel{
      .tp = 2, .pp = 2, .dp = 4, .ep = 4, .moe_imbalance = 1.25, .sequence_parallel = true};
  const LlmScenario scenario = h100_scenario(model, parallel, "hgx-h100-2node.json");
  const LayoutSimulation full = simulate_layout(scenario, SimulatedRanks::kAll);
  const LayoutSimulation symmetric =
      simulate_layout(scenario, SimulatedRanks::kPipelineRepresentatives);
  ASSERT_EQ(full.results.size(), 16u);
  EXPECT_NEAR(symmetric.summary.iteration_us, full.summary.iteration_us,
              1e-9 * full.summary.iteration_us);
  EXPECT_GT(exposed(full.summary, "expert parallel (all-to-all)"), 0);
  EXPECT_NEAR(exposed(symmetric.summary, "expert parallel (all-to-all)"),
              exposed(full.summary, "expert parallel (all-to-all)"),
              1e-9 * full.summary.iteration_us);
}

TEST(LlmMoeSimulation, Mixtral8x7bWithEp8On64Gpus) {
  llm::TransformerConfig model =
      llm::load_transformer_config(kSource + "/configs/models/mixtral-8x7b.json");
  const llm::ParallelConfig parallel{.tp = 2,
                                     .pp = 4,
                                     .dp = 8,
                                     .ep = 8,
                                     .sequence_parallel = true,
                                     .zero_stage = 1,
                                     .global_batch = 64};
  const LayoutSimulation run =
      simulate_layout(h100_scenario(model, parallel, "hgx-h100-8node.json"),
                      SimulatedRanks::kPipelineRepresentatives);
  std::cout << "Mixtral 8x7B TP2 PP4 DP8 EP8, 64 x H100, global batch 64: iteration "
            << run.summary.iteration_us / 1000 << " ms, MFU " << 100 * run.summary.mfu
            << " %, exposed all-to-all "
            << exposed(run.summary, "expert parallel (all-to-all)") / 1000 << " ms (unvalidated)\n";
  EXPECT_GT(run.summary.iteration_us, 0);
  EXPECT_GT(run.summary.mfu, 0);
  EXPECT_LT(run.summary.mfu, 1);
  EXPECT_GT(exposed(run.summary, "expert parallel (all-to-all)"), 0);
}

}  // namespace
}  // namespace perfsim::scenario
