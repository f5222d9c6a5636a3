// The MoE layer's host path (README "The MoE layer's host path and per-expert work"): exact
// per-rank counts of the dispatcher's token-count ops, its EP all-gather, device-to-host copies
// and host synchronization, the sorts by local expert, TE's per-expert GEMM launches and dummy
// weight gradients, on the 2-layer tiny MoE (4 experts, top 2, one micro-batch per rank); the
// host cost the calibration gives them; and the direction of the effect through the engine:
// more local experts, more host time, at equal expert FLOPs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "perfsim/trace.hpp"
#include "scenario/llm_calibration.hpp"
#include "scenario/plan_simulation.hpp"
#include "support/h100_sxm_scenario.hpp"
#include "support/op_phase.hpp"
#include "support/small_moe.hpp"
#include "support/tiny_llm.hpp"
#include "topology/topology.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

struct Counts {
  std::map<std::string, int> by_name;  // ops by name, in forward and backward
  int count_gathers = 0;               // all-gathers of int64 token counts
  Bytes count_gather_bytes_out = 0;
  int host_syncs = 0;     // ops whose runtime call blocks the host
  int forward_syncs = 0;  // of them, in the forward phase
  int to_host = 0;        // copies whose output is a host tensor
  double expert_flops = 0;
  int of(const std::string& name) const {
    const auto found = by_name.find(name);
    return found == by_name.end() ? 0 : found->second;
  }
};

Counts count(const Trace& trace) {
  Counts counts;
  for (const Op& op : trace.ops) {
    if (op.is_annotation)
      continue;
    ++counts.by_name[op.name];
    if (op.name == "aten::copy_" && !op.outputs.empty() && op.outputs.front().device == "cpu")
      ++counts.to_host;
    if (op.name == "te::grouped_gemm")
      counts.expert_flops += std::get<double>(op.find_attribute("flops")->value);
    if (op.comm && op.comm->kind == CollectiveKind::kAllGather && op.comm->dtype == DType::kInt64) {
      ++counts.count_gathers;
      counts.count_gather_bytes_out = op.comm->bytes_out;
    }
    for (const RuntimeCall& call : op.runtime_calls) {
      if (is_blocking_runtime_call(call.name)) {
        ++counts.host_syncs;
        if (op_phase(op) == "forward")
          ++counts.forward_syncs;
      }
    }
  }
  return counts;
}

// These counts are TE's fused permute path (moe_permute_fusion, as the Megatron-Bridge recipes
// set it); llm_moe_op_inventory_test counts the unfused one.
ParallelConfig fused(ParallelConfig parallel) {
  parallel.moe_permute_fusion = true;
  return parallel;
}

const std::string kLaunch(kExpertGemmLaunchOpName);
const std::string kDummyWgrad(kExpertDummyWgradOpName);
const std::string kSync(kDispatcherSyncOpName);

// tiny_moe: 2 MoE layers, 1 micro-batch per rank (global batch 4 over DP 4), DP 4.
TEST(LlmMoeHostPath, ExactCountsPerRankWithTwoLocalExperts) {
  const Counts c = count(generate_llm_rank(test_support::tiny_moe(), fused({.dp = 4, .ep = 2}), 0));
  // Per layer: one host wait (in the forward), one count all-gather over EP 2 of 4 int64 counts.
  EXPECT_EQ(c.of(kSync), 2);
  EXPECT_EQ(c.host_syncs, 2);
  EXPECT_EQ(c.forward_syncs, 2);
  EXPECT_EQ(c.count_gathers, 2);
  EXPECT_EQ(c.count_gather_bytes_out, 2 * 4 * 8);
  // Per layer: 4 copies to the host (tokens per local expert, input, output and TP splits).
  EXPECT_EQ(c.to_host, 2 * 4);
  // Per layer: 2 sorts forward (dispatch, combine) and their 2 backwards.
  EXPECT_EQ(c.of("te::moe_sort_chunks_by_index"), 2 * 4);
  // Per layer: 6 grouped GEMMs (2 forward, 4 backward), each one more launch for expert 2.
  EXPECT_EQ(c.of("te::grouped_gemm"), 2 * 6);
  EXPECT_EQ(c.of(kLaunch), 2 * 6 * 1);
  // Per layer: one dummy weight gradient per expert weight of fc1 and fc2.
  EXPECT_EQ(c.of(kDummyWgrad), 2 * 2 * 2);
}

TEST(LlmMoeHostPath, CountsFollowTheLocalExperts) {
  // EP 1: every expert local: no count exchange, tokens per expert alone to the host, still one
  // wait per MoE forward; 3 more launches per grouped GEMM; sorts as with EP 2.
  const Counts all_local =
      count(generate_llm_rank(test_support::tiny_moe(), fused({.dp = 4, .ep = 1}), 0));
  EXPECT_EQ(all_local.count_gathers, 0);
  EXPECT_EQ(all_local.to_host, 2);
  EXPECT_EQ(all_local.of(kSync), 2);
  EXPECT_EQ(all_local.of(kLaunch), 2 * 6 * 3);
  EXPECT_EQ(all_local.of(kDummyWgrad), 2 * 2 * 4);
  EXPECT_EQ(all_local.of("te::moe_sort_chunks_by_index"), 2 * 4);
  // EP 4: one expert per rank: nothing to sort, no extra launch, 2 dummy gradients per layer.
  const Counts one_local =
      count(generate_llm_rank(test_support::tiny_moe(), fused({.dp = 4, .ep = 4}), 0));
  EXPECT_EQ(one_local.count_gathers, 2);
  EXPECT_EQ(one_local.count_gather_bytes_out, 4 * 4 * 8);
  EXPECT_EQ(one_local.of(kSync), 2);
  EXPECT_EQ(one_local.of(kLaunch), 0);
  EXPECT_EQ(one_local.of(kDummyWgrad), 2 * 2);
  EXPECT_EQ(one_local.of("te::moe_sort_chunks_by_index"), 0);
  // Balanced routing: the same expert FLOPs whatever EP.
  EXPECT_DOUBLE_EQ(all_local.expert_flops, one_local.expert_flops);
}

TEST(LlmMoeHostPath, ExpertTensorParallelGathersOverEpThenEtp) {
  const ParallelConfig parallel{.tp = 2, .dp = 4, .ep = 2, .sequence_parallel = true};
  const Counts c = count(generate_llm_rank(test_support::tiny_moe(), fused(parallel), 0));
  EXPECT_EQ(c.count_gathers, 2 * 2);                   // per layer: over EP, then over ETP
  EXPECT_EQ(c.count_gather_bytes_out, 2 * 2 * 4 * 8);  // ETP x EP ranks' 4 counts
  EXPECT_EQ(c.to_host, 2 * 4);
  EXPECT_EQ(c.of(kSync), 2);
}

TEST(LlmMoeHostPath, FullRecomputationWaitsAgainInTheRecomputedForward) {
  ParallelConfig parallel{.dp = 4, .ep = 2};
  parallel.recompute = Recompute::kFull;
  const Counts c = count(generate_llm_rank(test_support::tiny_moe(), fused(parallel), 0));
  EXPECT_EQ(c.of(kSync), 2 * 2);
}

// The host cost the shipped calibration gives a rank's forward and backward ops, summed by name
// (the engine's T1); the gradient reduction after them depends on the expert-DP group.
double host_cost_us(const Trace& trace) {
  const HostOverheads overheads =
      scenario::with_host_cost({}, scenario::calibration_argument("", "H100-SXM").host);
  double total = 0;
  for (const Op& op : trace.ops) {
    const std::string name = op.is_annotation ? std::string() : op_phase(op);
    if (name == "forward" || name == "backward")
      total += overheads.t1_us(op.name);
  }
  return total;
}

TEST(LlmMoeHostPath, HostCostPerExpertFollowsTheRule) {
  const Trace ep2 = generate_llm_rank(test_support::tiny_moe(), fused({.dp = 4, .ep = 2}), 0);
  const Trace ep4 = generate_llm_rank(test_support::tiny_moe(), fused({.dp = 4, .ep = 4}), 0);
  // One expert more per rank: per layer 6 launches at the measured floor and 2 dummy
  // gradients at the per-op cost, plus the sorts at the per-op cost (EP 4 has none): 2 forward,
  // each with its chunk map, and 2 backward; the collectives and everything else are the same.
  const double per_op = scenario::calibration_argument("", "H100-SXM").host.host_us_per_forward_op;
  const double expected = 2 * (6 * scenario::kMeasuredLaunchUs + 2 * per_op + 6 * per_op);
  EXPECT_NEAR(host_cost_us(ep2) - host_cost_us(ep4), expected, 1e-9);
}

}  // namespace
}  // namespace perfsim::generators::llm

namespace perfsim::scenario {
namespace {

// Through the engine on one node: the same 8-expert model and expert FLOPs per rank at DP 8,
// EP 8 / 4 / 2 (1, 2, 4 local experts) with the shipped calibration: the busiest rank's CPU
// ends later with more local experts, and the iteration is longer.
TEST(LlmMoeHostPathSimulation, MoreLocalExpertsMoreHostTime) {
  const std::string topology =
      std::string(PERFSIM_SOURCE_DIR) + "/configs/topologies/hgx-h100.json";
  double previous_cpu_us = 0, previous_iteration_us = 0;
  for (const int ep : {8, 4, 2}) {
    LlmScenario scenario =
        test_support::h100_sxm_scenario(test_support::small_moe(2, 8), {.dp = 8, .ep = ep},
                                        topology::load_topology(topology), true);
    scenario.calibration = calibration_argument("", "H100-SXM");
    const LayoutSimulation run = simulate_layout(scenario, SimulatedRanks::kAll);
    double cpu_us = 0;
    for (const RankResult& rank : run.results)
      cpu_us = std::max(cpu_us, rank.cpu_us);
    EXPECT_GT(cpu_us, previous_cpu_us) << "EP " << ep;
    EXPECT_GT(run.summary.iteration_us, previous_iteration_us) << "EP " << ep;
    previous_cpu_us = cpu_us;
    previous_iteration_us = run.summary.iteration_us;
  }
}

}  // namespace
}  // namespace perfsim::scenario
