// Megatron-Core's delay_wgrad_compute (--delay-wgrad-compute) in the combined 1F1B step: the
// refusal without --moe-a2a-overlap, the same ops (only their order changes), the weight
// gradients in Megatron's order (TransformerLayerSchedulePlan.run: mlp_bwd_dw once dispatch_bwd
// is posted, attn_bwd_dw beside the next layer's combine_bwd), and the iteration's bounds
// through the engine.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "generators/llm/llm_collective_bus_rates.hpp"
#include "generators/llm/llm_delayed_wgrad.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "perfsim/error.hpp"
#include "scenario/plan_simulation.hpp"
#include "support/h100_sxm_scenario.hpp"
#include "support/small_moe.hpp"
#include "topology/topology.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

const std::string kSource = PERFSIM_SOURCE_DIR;

// 2 MoE layers, h 1024, 8 experts (top 2), sequence 1024, 4 micro-batches at DP 8, EP 8.
llm::ParallelConfig ep8(bool a2a_overlap, bool delay_wgrad) {
  return llm::ParallelConfig{.dp = 8,
                             .ep = 8,
                             .zero_stage = 1,
                             .moe_a2a_overlap = a2a_overlap,
                             .delay_wgrad_compute = delay_wgrad};
}

std::string string_attribute(const Op& op, const char* name) {
  const Attribute* attribute = op.find_attribute(name);
  return attribute == nullptr ? "" : std::get<std::string>(attribute->value);
}

std::int64_t micro_batch_of(const Op& op) {
  const Attribute* attribute = op.find_attribute("micro_batch");
  return attribute == nullptr ? -1 : std::get<std::int64_t>(attribute->value);
}

bool is_token_all_to_all(const Op& op) {
  return op.comm && op.comm->kind == CollectiveKind::kAllToAllv &&
         op.inputs.at(0).shape.size() != 1;
}

// The order of one backward (micro-batch `backward_mb`) and forward (`forward_mb`, -1: none) in
// the trace: "B"/"F" for each tokens' all-to-all of either, "m" for a run of delayed expert
// weight gradients (grouped GEMMs), "a" for a run of other delayed weight gradients.
std::string order_of(const Trace& trace, std::int64_t backward_mb, std::int64_t forward_mb) {
  std::string text;
  for (const Op& op : trace.ops) {
    const std::string phase = string_attribute(op, "phase");
    const bool backward = phase == "backward" && micro_batch_of(op) == backward_mb;
    const bool forward = phase == "forward" && micro_batch_of(op) == forward_mb;
    if (!backward && !forward)
      continue;
    char token = 0;
    if (is_token_all_to_all(op))
      token = backward ? 'B' : 'F';
    else if (llm::is_delayed_wgrad(op) && !op.kernels.empty())
      token = op.name == "te::grouped_gemm" ? 'm' : 'a';
    if (token != 0 && (text.empty() || text.back() != token || token == 'B' || token == 'F'))
      text += token;
  }
  return text;
}

std::map<std::string, int> counts_by_name(const Trace& trace) {
  std::map<std::string, int> counts;
  for (const Op& op : trace.ops)
    ++counts[op.name];
  return counts;
}

TEST(DelayWgradCompute, NeedsTheAllToAllOverlap) {
  const llm::TransformerConfig model = test_support::small_moe(2, 32);
  EXPECT_NO_THROW(llm::validate(model, ep8(true, true)));
  try {
    llm::validate(model, ep8(false, true));
    ADD_FAILURE() << "accepted --delay-wgrad-compute without --moe-a2a-overlap";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "delay_wgrad_compute");
    EXPECT_NE(error.problem().find("--moe-a2a-overlap"), std::string::npos) << error.problem();
    EXPECT_NE(error.problem().find("--delay-wgrad-compute"), std::string::npos) << error.problem();
  }
}

TEST(DelayWgradCompute, SameOpsInMegatronsOrder) {
  const llm::TransformerConfig model = test_support::small_moe(2, 32);
  const Trace plain = llm::generate_llm_stage_template(model, ep8(true, false), 0).trace;
  const Trace delayed = llm::generate_llm_stage_template(model, ep8(true, true), 0).trace;
  EXPECT_EQ(counts_by_name(delayed), counts_by_name(plain));  // only the order changes
  int tagged = 0;
  for (const Op& op : plain.ops)
    EXPECT_FALSE(llm::is_delayed_wgrad(op)) << op.name;
  for (const Op& op : delayed.ops)
    tagged += llm::is_delayed_wgrad(op) ? 1 : 0;
  // Per layer and micro-batch: 2 expert grouped GEMMs and 2 dummy gradients (1 local expert
  // x FC1, FC2), attention's QKV and output projection: 6; 2 layers x 4 micro-batches.
  EXPECT_EQ(tagged, 6 * 2 * 4);
  std::vector<std::int64_t> ids;
  for (const Op& op : delayed.ops)
    ids.push_back(op.id);
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << "op ids renumbered in trace order";

  // The combined step B0 + F1, per layer pair: combine_bwd (B), attn_fwd, dispatch_fwd (F),
  // mlp_bwd, dispatch_bwd (B), then mlp_bwd_dw (m) before mlp_fwd, combine_fwd (F), attn_bwd,
  // the next layer's combine_bwd (B) and attn_bwd_dw (a) beside it; layer 0's attn_bwd_dw (the
  // last layer in the backward) stays after its attn_bwd.
  EXPECT_EQ(order_of(plain, 0, 1), "BFBFBFBF");
  EXPECT_EQ(order_of(delayed, 0, 1), "BFBmFBaFBmFa");
  // The last backward runs alone (combined_1f1b_schedule_for_no_pipelining) through the same
  // plan: its weight gradients follow the all-to-all after them too.
  EXPECT_EQ(order_of(plain, 3, -1), "BBBB");
  EXPECT_EQ(order_of(delayed, 3, -1), "BBmBaBma");
  // The ops right after a dispatch_bwd (tokens then probabilities) are the experts' weight
  // gradients, on the compute stream beside it.
  for (std::size_t i = 0; i + 2 < delayed.ops.size(); ++i) {
    const Op& op = delayed.ops[i];
    if (!is_token_all_to_all(op) || string_attribute(op, "phase") != "backward" ||
        micro_batch_of(op) != 0)
      continue;
    const Op& next = delayed.ops[i + 1];
    const bool dispatch_backward = next.comm && next.comm->kind == CollectiveKind::kAllToAllv;
    if (dispatch_backward) {
      EXPECT_TRUE(llm::is_delayed_wgrad(delayed.ops[i + 2])) << delayed.ops[i + 2].name;
      EXPECT_EQ(delayed.ops[i + 2].kernels.at(0).stream, kDefaultComputeStream);
    }
  }
}

double value_or_zero(const std::map<std::string, double>& values, const std::string& key) {
  const auto found = values.find(key);
  return found == values.end() ? 0.0 : found->second;
}

TEST(DelayWgradCompute, IterationGainIsBoundedByTheExposedAllToAll) {
  const topology::Topology node =
      topology::load_topology(kSource + "/configs/topologies/hgx-h100.json");
  auto run = [&](bool delay) {
    LlmScenario scenario = test_support::h100_sxm_scenario(test_support::small_moe(2, 32),
                                                           ep8(true, delay), node, true);
    const std::string device_file = kSource + "/configs/devices/H100-SXM.json";
    scenario.parallel =
        with_compute_rate(llm::with_collective_bus_rates(scenario.parallel, node), scenario.model,
                          devices::parse_device_json(scenario.device_json, device_file));
    return simulate_layout(scenario, SimulatedRanks::kPipelineRepresentatives);
  };
  const LayoutSimulation off = run(false), on = run(true);
  const std::string kEp = "expert parallel (all-to-all)";
  const double exposed_off = value_or_zero(off.summary.exposed_us_by_kind, kEp);
  const double exposed_on = value_or_zero(on.summary.exposed_us_by_kind, kEp);
  double compute_on_us = 0;
  for (const RankResult& result : on.results)
    for (const StreamBreakdown& stream : result.streams)
      if (stream.stream == kDefaultComputeStream)
        compute_on_us = std::max(compute_on_us, stream.busy_us);
  std::cout << "small MoE EP 8, --moe-a2a-overlap, 4 micro-batches: " << off.summary.iteration_us
            << " -> " << on.summary.iteration_us << " us with --delay-wgrad-compute; exposed "
            << "all-to-all " << exposed_off << " -> " << exposed_on << " us; compute "
            << compute_on_us << " us\n";
  ASSERT_GT(exposed_off, 0);
  EXPECT_LT(exposed_on, exposed_off);
  EXPECT_LT(on.summary.iteration_us, off.summary.iteration_us);
  // Not faster than hiding every exposed all-to-all for free, nor than its compute alone.
  EXPECT_GE(on.summary.iteration_us, off.summary.iteration_us - exposed_off);
  EXPECT_GE(on.summary.iteration_us, compute_on_us);
}

TEST(DelayWgradCompute, RunTableColumn) {
  const std::string header =
      "name,model,seq_len,gpus,tp,pp,dp,micro_batch,global_batch,device,topology,"
      "measured_iteration_s,moe_a2a_overlap,delay_wgrad_compute\n";
  auto row_with = [&](const std::string& cell) {
    return header + "r,small,1024,8,1,1,8,1,32,H100-SXM,hgx-h100,1.0,1," + cell + "\n";
  };
  EXPECT_TRUE(validation::parse_run_table(row_with("1"), "t.csv").rows.at(0).delay_wgrad_compute);
  EXPECT_FALSE(validation::parse_run_table(row_with("0"), "t.csv").rows.at(0).delay_wgrad_compute);
  EXPECT_FALSE(validation::parse_run_table(row_with(""), "t.csv").rows.at(0).delay_wgrad_compute);
  const std::string error = validation::parse_run_table(row_with("2"), "t.csv").rows.at(0).error;
  EXPECT_NE(error.find("delay_wgrad_compute"), std::string::npos) << error;
}

}  // namespace
}  // namespace perfsim::scenario
