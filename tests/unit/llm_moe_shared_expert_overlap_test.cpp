// Megatron-Core's moe_shared_expert_overlap (--moe-shared-expert-overlap, shared_experts.py):
// the refusals, the same ops with the shared experts' pieces beside the dispatcher's
// all-to-alls (fc1 beside the dispatch, fc2 beside the combine, the mirror in the backward) and
// marked as sharing the GPU with them, and the iteration's bounds through the engine.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "generators/llm/llm_collective_bus_rates.hpp"
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

// 2 MoE layers, h 1024, 8 experts (top 2) and a shared expert of 1024, 4 micro-batches at
// DP 8, EP 8.
llm::TransformerConfig small_moe_with_shared_expert() {
  llm::TransformerConfig model = test_support::small_moe(2, 32);
  model.moe.shared_expert_ffn_hidden = 1024;
  return model;
}

llm::ParallelConfig ep8(bool overlap) {
  llm::ParallelConfig parallel{.dp = 8, .ep = 8, .zero_stage = 1};
  parallel.moe_shared_expert_overlap = overlap;
  return parallel;
}

std::string string_attribute(const Op& op, const char* name) {
  const Attribute* attribute = op.find_attribute(name);
  return attribute == nullptr ? "" : std::get<std::string>(attribute->value);
}

std::int64_t integer_attribute(const Op& op, const char* name) {
  const Attribute* attribute = op.find_attribute(name);
  return attribute == nullptr ? -1 : std::get<std::int64_t>(attribute->value);
}

// One micro-batch's forward or backward in trace order: "A" for each tokens' all-to-all, "s"
// for a run of compute ops marked as beside a communication kernel (contention_sms).
std::string order_of(const Trace& trace, const std::string& phase, std::int64_t micro_batch) {
  std::string text;
  for (const Op& op : trace.ops) {
    if (string_attribute(op, "phase") != phase ||
        integer_attribute(op, "micro_batch") != micro_batch)
      continue;
    if (op.comm && op.comm->kind == CollectiveKind::kAllToAllv && op.inputs.at(0).shape.size() != 1)
      text += 'A';
    else if (!op.comm && integer_attribute(op, "contention_sms") > 0 &&
             (text.empty() || text.back() != 's'))
      text += 's';
  }
  return text;
}

std::map<std::string, int> counts_by_name(const Trace& trace) {
  std::map<std::string, int> counts;
  for (const Op& op : trace.ops)
    ++counts[op.name];
  return counts;
}

void expect_refused(const llm::TransformerConfig& model, const llm::ParallelConfig& parallel,
                    const std::string& words) {
  try {
    llm::validate(model, parallel);
    ADD_FAILURE() << "accepted; expected a refusal naming \"" << words << "\"";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "moe_shared_expert_overlap");
    EXPECT_NE(error.problem().find(words), std::string::npos) << error.problem();
    EXPECT_NE(error.problem().find("--moe-shared-expert-overlap"), std::string::npos)
        << error.problem();
  }
}

TEST(MoeSharedExpertOverlap, RefusesWhatMegatronRefusesAndWhatOverlapsNothing) {
  const llm::TransformerConfig model = small_moe_with_shared_expert();
  EXPECT_NO_THROW(llm::validate(model, ep8(true)));
  llm::ParallelConfig both = ep8(true);
  both.moe_a2a_overlap = true;
  expect_refused(model, both, "--moe-a2a-overlap");
  expect_refused(test_support::small_moe(2, 32), ep8(true), "shared experts");
  llm::ParallelConfig ep1 = ep8(true);
  ep1.ep = 1;
  expect_refused(model, ep1, "EP > 1");
  llm::ParallelConfig flex = ep8(true);
  flex.moe_token_dispatcher = llm::MoeTokenDispatcher::kFlex;
  expect_refused(model, flex, "flex");
  flex.moe_shared_expert_overlap = false;
  EXPECT_NO_THROW(llm::validate(model, flex));
}

TEST(MoeSharedExpertOverlap, SameOpsWithTheSharedExpertsBesideTheAllToAlls) {
  const llm::TransformerConfig model = small_moe_with_shared_expert();
  const Trace plain = llm::generate_llm_stage_template(model, ep8(false), 0).trace;
  const Trace overlapped = llm::generate_llm_stage_template(model, ep8(true), 0).trace;
  EXPECT_EQ(counts_by_name(overlapped), counts_by_name(plain));  // only the order changes
  // Per layer: dispatch (A), shared fc1 and activation beside it (s), combine (A), shared fc2
  // beside it (s); the backward: the combine's all-to-all back (A), shared fc2's backward
  // beside it, the dispatch's back (A), shared fc1's backward beside it.
  for (std::int64_t micro_batch = 0; micro_batch < 4; ++micro_batch) {
    EXPECT_EQ(order_of(plain, "forward", micro_batch), "AAAA");
    EXPECT_EQ(order_of(plain, "backward", micro_batch), "AAAA");
    EXPECT_EQ(order_of(overlapped, "forward", micro_batch), "AsAsAsAs");
    EXPECT_EQ(order_of(overlapped, "backward", micro_batch), "AsAsAsAs");
  }
  // The marked ops are on the compute stream, the all-to-alls on the EP stream.
  for (const Op& op : overlapped.ops) {
    if (op.comm && op.comm->kind == CollectiveKind::kAllToAllv) {
      EXPECT_EQ(op.kernels.at(0).stream, llm::kExpertParallelStream);
    } else if (!op.comm && integer_attribute(op, "contention_sms") > 0) {
      EXPECT_EQ(op.kernels.at(0).stream, kDefaultComputeStream);
    }
  }
}

double value_or_zero(const std::map<std::string, double>& values, const std::string& key) {
  const auto found = values.find(key);
  return found == values.end() ? 0.0 : found->second;
}

TEST(MoeSharedExpertOverlap, IterationGainIsBoundedByTheExposedAllToAll) {
  const topology::Topology node =
      topology::load_topology(kSource + "/configs/topologies/hgx-h100.json");
  auto run = [&](bool overlap) {
    LlmScenario scenario =
        test_support::h100_sxm_scenario(small_moe_with_shared_expert(), ep8(overlap), node, true);
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
  std::cout << "small MoE with a shared expert, EP 8, 4 micro-batches: " << off.summary.iteration_us
            << " -> " << on.summary.iteration_us
            << " us with --moe-shared-expert-overlap; exposed all-to-all " << exposed_off << " -> "
            << exposed_on << " us; compute " << compute_on_us << " us\n";
  ASSERT_GT(exposed_off, 0);
  EXPECT_LT(exposed_on, exposed_off);
  EXPECT_LT(on.summary.iteration_us, off.summary.iteration_us);
  EXPECT_GE(on.summary.iteration_us, off.summary.iteration_us - exposed_off);
  EXPECT_GE(on.summary.iteration_us, compute_on_us);
}

TEST(MoeSharedExpertOverlap, RunTableColumn) {
  const std::string header =
      "name,model,seq_len,gpus,tp,pp,dp,micro_batch,global_batch,device,topology,"
      "measured_iteration_s,moe_shared_expert_overlap\n";
  auto row_with = [&](const std::string& cell) {
    return header + "r,small,1024,8,1,1,8,1,32,H100-SXM,hgx-h100,1.0," + cell + "\n";
  };
  EXPECT_TRUE(
      validation::parse_run_table(row_with("1"), "t.csv").rows.at(0).moe_shared_expert_overlap);
  EXPECT_FALSE(
      validation::parse_run_table(row_with(""), "t.csv").rows.at(0).moe_shared_expert_overlap);
  const std::string error = validation::parse_run_table(row_with("2"), "t.csv").rows.at(0).error;
  EXPECT_NE(error.find("moe_shared_expert_overlap"), std::string::npos) << error;
}

}  // namespace
}  // namespace perfsim::scenario
