// Megatron-Core's EP all-to-all overlap (--moe-a2a-overlap, overlap_moe_expert_parallel_comm):
// the combined 1F1B schedules, Megatron's refusals, the combined step's op order, streams and
// contention marks on a hand-countable case, and the iteration's bounds through the engine
// (faster by no more than the exposed all-to-all time, not faster than the larger of the
// compute left and the all-to-all time).
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "generators/llm/llm_collective_bus_rates.hpp"
#include "generators/llm/llm_combined_step.hpp"
#include "generators/llm/llm_pipeline_schedule.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "perfsim/error.hpp"
#include "planner/layout_enumerator.hpp"
#include "scenario/plan_simulation.hpp"
#include "support/h100_sxm_scenario.hpp"
#include "support/small_moe.hpp"
#include "topology/topology.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;
using llm::PipelineAction;
using llm::PipelineStep;

const std::string kSource = PERFSIM_SOURCE_DIR;

// 2 MoE layers, h 1024, 8 experts of 1024 (top 2), sequence 1024, 4 micro-batches at DP 8.
llm::TransformerConfig small_moe() {
  return test_support::small_moe(2, 32);
}

llm::ParallelConfig ep8(bool overlap) {
  return llm::ParallelConfig{.dp = 8, .ep = 8, .zero_stage = 1, .moe_a2a_overlap = overlap};
}

std::string describe(const std::vector<PipelineStep>& steps) {
  std::string text;
  for (const PipelineStep& step : steps) {
    text += step.action == PipelineAction::kForward    ? "F"
            : step.action == PipelineAction::kBackward ? "B"
            : step.action == PipelineAction::kRecvForward ||
                    step.action == PipelineAction::kRecvBackward
                ? "r"
                : "s";
    if (step.action == PipelineAction::kForward || step.action == PipelineAction::kBackward)
      text += std::to_string(step.micro_batch) + (step.combined ? "*" : "");
    text += " ";
  }
  return text;
}

TEST(MoeA2aOverlap, NoPipeliningScheduleCombinesEachForwardWithThePreviousBackward) {
  // combined_1f1b_schedule_for_no_pipelining: the first forward and the last backward alone.
  EXPECT_EQ(describe(llm::combined_no_pipelining_schedule(4)), "F0 F1* B0 F2* B1 F3* B2 B3 ");
  EXPECT_EQ(describe(llm::combined_no_pipelining_schedule(1)), "F0 B0 ");
}

TEST(MoeA2aOverlap, InterleavedScheduleWarmsUpOneMoreForwardAndPairsTheSteadyState) {
  constexpr int kStages = 3, kChunks = 2, kMicroBatches = 6, kTotal = kChunks * kMicroBatches;
  for (int stage = 0; stage < kStages; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const auto plain = llm::interleaved_schedule(stage, kStages, kChunks, kMicroBatches);
    const auto combined = llm::interleaved_schedule(stage, kStages, kChunks, kMicroBatches, true);
    auto forwards_before_first_backward = [](const std::vector<PipelineStep>& steps) {
      int count = 0;
      for (const PipelineStep& step : steps) {
        if (step.action == PipelineAction::kBackward)
          break;
        count += step.action == PipelineAction::kForward ? 1 : 0;
      }
      return count;
    };
    // Megatron's warm-up (P - stage - 1) x 2 + (V - 1) x P, + 1 with the overlap. Without it
    // the first steady forward also precedes the first backward.
    const int warmup = (kStages - stage - 1) * 2 + (kChunks - 1) * kStages;
    EXPECT_EQ(forwards_before_first_backward(plain), warmup + 1);
    // With it the warm-up's W + 1 forwards, then the first combined forward.
    EXPECT_EQ(forwards_before_first_backward(combined), warmup + 2);
    // Every steady-state pair combined, each combined forward followed by its backward, also
    // after overlap_p2p_comm moves the receives.
    for (const auto& steps : {combined, llm::receives_one_step_ahead(combined)}) {
      int pairs = 0;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        if (!steps[i].combined)
          continue;
        ++pairs;
        ASSERT_LT(i + 1, steps.size());
        EXPECT_EQ(steps[i + 1].action, PipelineAction::kBackward) << describe(steps);
      }
      EXPECT_EQ(pairs, kTotal - (warmup + 1));
      EXPECT_EQ(steps.size(), plain.size());  // the same transfers and compute steps
    }
  }
}

void expect_refused(const llm::TransformerConfig& model, const llm::ParallelConfig& parallel,
                    const std::string& words) {
  try {
    llm::validate(model, parallel);
    ADD_FAILURE() << "accepted; expected a refusal naming \"" << words << "\"";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "moe_a2a_overlap");
    EXPECT_NE(error.problem().find(words), std::string::npos) << error.problem();
  }
}

TEST(MoeA2aOverlap, RefusesWhatMegatronRefuses) {
  const llm::TransformerConfig model = small_moe();
  EXPECT_NO_THROW(llm::validate(model, ep8(true)));
  llm::ParallelConfig parallel = ep8(true);
  parallel.ep = 1;
  expect_refused(model, parallel, "EP > 1");
  llm::TransformerConfig dense = model;
  dense.moe = {};
  parallel = ep8(true);
  parallel.ep = 1;  // (EP > 1 is itself refused without experts)
  expect_refused(dense, parallel, "mixture-of-experts");
  parallel = ep8(true);
  parallel.recompute = llm::Recompute::kFull;
  expect_refused(model, parallel, "full recomputation");
  parallel.recompute = llm::Recompute::kSelective;  // allowed (not a recompute method)
  EXPECT_NO_THROW(llm::validate(model, parallel));
  llm::TransformerConfig fp32 = model;
  fp32.dtype = DType::kFloat32;
  expect_refused(fp32, ep8(true), "bf16 or fp16");
  llm::TransformerConfig mtp = model;
  mtp.mtp_num_layers = 2;
  expect_refused(mtp, ep8(true), "one MTP layer");
  // PP > 1 without interleaving: Megatron asserts virtual_pipeline_model_parallel_size.
  llm::TransformerConfig deep = model;
  deep.layers = 6;
  parallel = llm::ParallelConfig{.pp = 3, .dp = 8, .ep = 8, .moe_a2a_overlap = true};
  expect_refused(deep, parallel, "virtual_stages > 1");
  parallel.virtual_stages = 2;
  parallel.global_batch = 48;  // 6 micro-batches, a multiple of PP
  EXPECT_NO_THROW(llm::validate(deep, parallel));
  parallel.overlap_p2p_comm = false;  // perfsim's own limit
  expect_refused(deep, parallel, "not modelled");
}

struct OpCounts {
  std::map<std::string, int> by_name;
  int all_to_alls = 0;  // the tokens' (rows of h); the probabilities' (1-D) counted apart
  int all_to_alls_on_ep_stream = 0;
  int probability_all_to_alls = 0;
  int probabilities_after_their_tokens = 0;  // posted right after a tokens' one, same micro-batch
  int marked = 0;                            // compute ops with contention_sms
  std::vector<std::int64_t> all_to_all_micro_batches;
};

std::int64_t integer_attribute(const Op& op, const char* name) {
  const Attribute* attribute = op.find_attribute(name);
  return attribute == nullptr ? -1 : std::get<std::int64_t>(attribute->value);
}

OpCounts count(const Trace& trace) {
  OpCounts counts;
  std::vector<std::int64_t> ids;
  const Op* previous = nullptr;
  for (const Op& op : trace.ops) {
    ids.push_back(op.id);
    ++counts.by_name[op.name];
    const Op* before = previous;
    previous = &op;
    if (op.comm && op.comm->kind == CollectiveKind::kAllToAllv &&
        op.inputs.at(0).shape.size() == 1) {
      ++counts.probability_all_to_alls;
      counts.probabilities_after_their_tokens +=
          before != nullptr && before->comm && before->comm->kind == CollectiveKind::kAllToAllv &&
          integer_attribute(*before, "micro_batch") == integer_attribute(op, "micro_batch");
    } else if (op.comm && op.comm->kind == CollectiveKind::kAllToAllv) {
      ++counts.all_to_alls;
      counts.all_to_alls_on_ep_stream += op.kernels.at(0).stream == llm::kExpertParallelStream;
      counts.all_to_all_micro_batches.push_back(integer_attribute(op, "micro_batch"));
    }
    if (!op.comm && integer_attribute(op, "contention_sms") > 0)
      ++counts.marked;
  }
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << "op ids renumbered in trace order";
  return counts;
}

TEST(MoeA2aOverlap, CombinedStepsReorderTheSameOpsAndAlternateTheAllToAlls) {
  const llm::TransformerConfig model = small_moe();
  const OpCounts off = count(llm::generate_llm_stage_template(model, ep8(false), 0).trace);
  const OpCounts on = count(llm::generate_llm_stage_template(model, ep8(true), 0).trace);
  EXPECT_EQ(on.by_name, off.by_name);  // nothing added or dropped, only reordered
  // 2 layers x (dispatch + combine) x (forward + backward) x 4 micro-batches.
  EXPECT_EQ(off.all_to_alls, 2 * 2 * 2 * 4);
  EXPECT_EQ(on.all_to_alls, off.all_to_alls);
  // The probabilities to the experts and their gradients back: 2 layers x 2 x 4 micro-batches,
  // each posted with the tokens' all-to-all before it (Megatron-Core's dispatch node).
  EXPECT_EQ(off.probability_all_to_alls, 2 * 2 * 4);
  EXPECT_EQ(on.probability_all_to_alls, off.probability_all_to_alls);
  EXPECT_EQ(on.probabilities_after_their_tokens, on.probability_all_to_alls);
  EXPECT_EQ(on.all_to_alls_on_ep_stream, on.all_to_alls);  // stream 32, never the compute one
  EXPECT_EQ(off.marked, 0);
  EXPECT_GT(on.marked, 0);
  // F0 alone (4 all-to-alls of micro-batch 0), then each combined step alternates the
  // backward's and the forward's all-to-alls (B0 F1 B0 F1 ...), then B3 alone.
  const std::vector<std::int64_t> expected{0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 1, 2, 1, 2,
                                           1, 2, 1, 2, 2, 3, 2, 3, 2, 3, 2, 3, 3, 3, 3, 3};
  EXPECT_EQ(on.all_to_all_micro_batches, expected);
}

TEST(MoeA2aOverlap, UnknownRatesMarkWholePiecesEstimatesMarkFewer) {
  const llm::TransformerConfig model = small_moe();
  llm::ParallelConfig estimated = ep8(true);
  estimated.bus_rates.ep_GBps = 360;
  estimated.gemm_TFLOPs = 700;
  estimated.hbm_GBps = 3000;
  const OpCounts whole = count(llm::generate_llm_stage_template(model, ep8(true), 0).trace);
  const OpCounts windowed = count(llm::generate_llm_stage_template(model, estimated, 0).trace);
  EXPECT_GT(windowed.marked, 0);
  EXPECT_LT(windowed.marked, whole.marked);
}

TEST(MoeA2aOverlap, AllToAllEstimateIsItsBusBytesAtTheBusRate) {
  Op op;
  op.comm = CommInfo{};
  op.comm->group_size = 8;
  op.comm->bytes_in = 8'000'000;
  op.comm->bytes_out = 4'000'000;
  // 8e6 B x 7/8 at 100 GB/s = 70 us; no rate: 0.
  EXPECT_DOUBLE_EQ(llm::all_to_all_estimate_us(op, 100), 70);
  EXPECT_DOUBLE_EQ(llm::all_to_all_estimate_us(op, 0), 0);
}

double value_or_zero(const std::map<std::string, double>& values, const std::string& key) {
  const auto found = values.find(key);
  return found == values.end() ? 0.0 : found->second;
}

TEST(MoeA2aOverlap, IterationGainIsBoundedByTheExposedAllToAll) {
  const topology::Topology node =
      topology::load_topology(kSource + "/configs/topologies/hgx-h100.json");
  auto run = [&](bool overlap) {
    LlmScenario scenario = test_support::h100_sxm_scenario(small_moe(), ep8(overlap), node, true);
    const std::string device_file = kSource + "/configs/devices/H100-SXM.json";
    scenario.parallel =
        with_compute_rate(llm::with_collective_bus_rates(scenario.parallel, node), scenario.model,
                          devices::parse_device_json(scenario.device_json, device_file));
    return simulate_layout(scenario, SimulatedRanks::kPipelineRepresentatives).summary;
  };
  const LlmRunSummary off = run(false), on = run(true);
  const std::string kEp = "expert parallel (all-to-all)";
  const double exposed_off = value_or_zero(off.exposed_us_by_kind, kEp);
  const double exposed_on = value_or_zero(on.exposed_us_by_kind, kEp);
  const double all_to_all_on = value_or_zero(on.comm_us_by_kind, kEp);
  std::cout << "small MoE EP 8, 4 micro-batches: " << off.iteration_us << " -> " << on.iteration_us
            << " us; exposed all-to-all " << exposed_off << " -> " << exposed_on << " us of "
            << all_to_all_on << " us\n";
  ASSERT_GT(exposed_off, 0);
  EXPECT_LT(exposed_on, exposed_off);
  EXPECT_LT(on.iteration_us, off.iteration_us);
  // Not faster than hiding every exposed all-to-all for free ...
  EXPECT_GE(on.iteration_us, off.iteration_us - exposed_off);
  // ... nor than the all-to-alls alone on their stream.
  EXPECT_GE(on.iteration_us, all_to_all_on);
}

TEST(MoeA2aOverlap, PlannerSwitchesItOnWhereMegatronAllowsIt) {
  llm::TransformerConfig model = small_moe();
  model.layers = 6;
  model.global_batch = 48;
  planner::EnumerationLimits limits;
  limits.gpus = 24;
  limits.max_virtual_stages = 2;
  limits.moe_a2a_overlap = true;
  int on = 0, off = 0;
  for (const llm::ParallelConfig& layout : planner::enumerate_layouts(model, limits)) {
    const bool allowed = layout.ep > 1 && (layout.pp == 1 || layout.virtual_stages > 1) &&
                         layout.recompute != llm::Recompute::kFull;
    EXPECT_EQ(layout.moe_a2a_overlap, allowed) << describe_layout(layout);
    (layout.moe_a2a_overlap ? on : off) += 1;
  }
  EXPECT_GT(on, 0);
  EXPECT_GT(off, 0);
}

TEST(MoeA2aOverlap, RunTableColumn) {
  const std::string header =
      "name,model,seq_len,gpus,tp,pp,dp,micro_batch,global_batch,device,topology,"
      "measured_iteration_s,moe_a2a_overlap\n";
  auto row_with = [&](const std::string& cell) {
    return header + "r,small,1024,8,1,1,8,1,32,H100-SXM,hgx-h100,1.0," + cell + "\n";
  };
  EXPECT_TRUE(validation::parse_run_table(row_with("1"), "t.csv").rows.at(0).moe_a2a_overlap);
  EXPECT_FALSE(validation::parse_run_table(row_with("0"), "t.csv").rows.at(0).moe_a2a_overlap);
  EXPECT_FALSE(validation::parse_run_table(row_with(""), "t.csv").rows.at(0).moe_a2a_overlap);
  // A bad cell is the row's error, naming the column.
  const std::string error = validation::parse_run_table(row_with("2"), "t.csv").rows.at(0).error;
  EXPECT_NE(error.find("moe_a2a_overlap"), std::string::npos) << error;
  // An unknown column is refused: the column list holds this one.
  EXPECT_NO_THROW(validation::parse_run_table(row_with("1"), "t.csv"));
}

}  // namespace
}  // namespace perfsim::scenario
