// FP8 current scaling (README "FP8 current scaling"): exact extra ops and bytes per quantized
// GEMM operand on small generated cases, dense (TP 1; TP 2 with SP) and MoE (2 and 4 local
// experts); delayed scaling unchanged (the current trace is the delayed one plus the new ops,
// less the delayed recipe's amax history updates: llm_fp8_delayed_amax_test.cpp);
// the host cost of the new launches; the recipe's parsing and refusals; and the direction of
// the effect through the engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "perfsim/error.hpp"
#include "perfsim/trace.hpp"
#include "scenario/llm_calibration.hpp"
#include "scenario/plan_simulation.hpp"
#include "support/delayed_amax_updates.hpp"
#include "support/h100_sxm_scenario.hpp"
#include "support/op_phase.hpp"
#include "support/small_moe.hpp"
#include "support/tiny_llm.hpp"
#include "topology/topology.hpp"
#include "validation/run_table.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

const std::string kAmax(kFp8AmaxOpName);
const std::string kScale(kFp8ScaleOpName);
const std::string kCastLaunch(kFp8ExpertCastLaunchOpName);
const std::string kCast = "te::cast_transpose";

TransformerConfig with_recipe(TransformerConfig model, Fp8Recipe recipe) {
  model.dtype = DType::kFloat8;
  model.fp8_recipe = recipe;
  return model;
}

struct Extras {
  std::map<std::string, int> ops;  // by name
  Bytes amax_read = 0;             // bytes the amax kernels read
  Bytes cast_read = 0;             // bytes the casts read
  int amax_all_reduces = 0;        // one-float fp32 all-reduces over TP
  int other_all_reduces = 0;
  int of(const std::string& name) const {
    const auto found = ops.find(name);
    return found == ops.end() ? 0 : found->second;
  }
};

Extras extras(const Trace& trace) {
  const std::set<std::int64_t> delayed_updates = test_support::delayed_amax_update_ops(trace);
  Extras e;
  for (const Op& op : trace.ops) {
    if (op.is_annotation)
      continue;
    ++e.ops[op.name];
    if (op.name == kAmax) {
      e.amax_read += op.inputs.at(0).bytes();
      EXPECT_EQ(op.outputs.at(0).bytes(), 4);
    }
    if (op.name == kCast)
      e.cast_read += op.inputs.at(0).bytes();
    if (op.comm && op.comm->kind == CollectiveKind::kAllReduce &&
        delayed_updates.count(op.id) == 0) {
      const bool amax = op.comm->dtype == DType::kFloat32 && op.comm->bytes_in == 4;
      (amax ? e.amax_all_reduces : e.other_all_reduces)++;
    }
  }
  return e;
}

// The trace's op names, without the ops current scaling adds and those of delayed scaling's
// amax history updates.
std::vector<std::string> names_without_extras(const Trace& trace) {
  const std::set<std::int64_t> delayed_updates = test_support::delayed_amax_update_ops(trace);
  std::vector<std::string> names;
  for (const Op& op : trace.ops) {
    if (op.name == kAmax || op.name == kScale || op.name == kCastLaunch ||
        delayed_updates.count(op.id) > 0)
      continue;
    if (op.comm && op.comm->kind == CollectiveKind::kAllReduce &&
        op.comm->dtype == DType::kFloat32 && op.comm->bytes_in == 4)
      continue;
    names.push_back(op.name);
  }
  return names;
}

// tiny_gpt: 8 layers, h 256, QKV width 768, FFN 1024 (not gated), s 128, micro-batch 2,
// 16 micro-batches at DP 1: 256 tokens per micro-batch.
TEST(LlmFp8CurrentScaling, DenseExtraOpsAndBytesPerOperand) {
  const ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 1};
  const Trace delayed =
      generate_llm_rank(with_recipe(test_support::tiny_gpt(), Fp8Recipe::kDelayed), parallel, 0);
  const Trace current =
      generate_llm_rank(with_recipe(test_support::tiny_gpt(), Fp8Recipe::kCurrent), parallel, 0);
  const Extras d = extras(delayed), c = extras(current);
  EXPECT_EQ(d.of(kAmax) + d.of(kScale) + d.of(kCastLaunch), 0);
  // The casts are the same: 8 per layer and micro-batch, 4 weights per layer and iteration.
  EXPECT_EQ(c.of(kCast), 16 * 8 * 8 + 8 * 4);
  EXPECT_EQ(c.of(kCast), d.of(kCast));
  EXPECT_EQ(c.cast_read, d.cast_read);
  // Per layer and micro-batch: an amax kernel for proj's and FC2's inputs and the four output
  // gradients (QKV's and FC1's inputs take the amax their norm wrote); a scale for all eight.
  // Per layer once per iteration: an amax and a scale per weight.
  EXPECT_EQ(c.of(kAmax), 16 * 8 * 6 + 8 * 4);
  EXPECT_EQ(c.of(kScale), 16 * 8 * 8 + 8 * 4);
  EXPECT_EQ(c.of(kCastLaunch), 0);
  // Each amax kernel reads its tensor once in bf16: proj in 256 x 256, FC2 in 256 x 1024,
  // gradients of QKV 256 x 768, proj 256 x 256, FC1 256 x 1024, FC2 256 x 256; the weights
  // 256 x 768 + 256 x 256 + 256 x 1024 + 1024 x 256.
  const Bytes per_micro_batch = 2 * 256 * (256 + 1024 + 768 + 256 + 1024 + 256);
  const Bytes weights = 2 * (256 * 768 + 256 * 256 + 2 * 256 * 1024);
  EXPECT_EQ(c.amax_read, 16 * 8 * per_micro_batch + 8 * weights);
  // Every cast but the norm-fed QKV and FC1 inputs (256 x 256 bf16 each) reads its tensor
  // once more.
  EXPECT_EQ(c.cast_read - c.amax_read, 16 * 8 * 2 * (2 * 256 * 256));
  // No SP: no amax all-reduce; the other collectives unchanged.
  EXPECT_EQ(c.amax_all_reduces, 0);
  EXPECT_EQ(c.other_all_reduces, d.other_all_reduces);
  // Delayed is the current trace without the new ops, op for op.
  EXPECT_EQ(names_without_extras(current), names_without_extras(delayed));
  // Delayed scaling's own: per micro-batch a forward and a backward amax update (the
  // concatenation and the fused update; one rank, no all-reduce).
  EXPECT_EQ(names_without_extras(delayed).size() + 16 * 2 * 2, delayed.ops.size());
}

TEST(LlmFp8CurrentScaling, SequenceParallelReducesTheAmaxOverTp) {
  for (const bool fp8_all_gather : {false, true}) {
    ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 1, .sequence_parallel = true};
    parallel.fp8_all_gather = fp8_all_gather;
    const Trace current =
        generate_llm_rank(with_recipe(test_support::tiny_gpt(), Fp8Recipe::kCurrent), parallel, 0);
    const Trace delayed =
        generate_llm_rank(with_recipe(test_support::tiny_gpt(), Fp8Recipe::kDelayed), parallel, 0);
    const Extras c = extras(current), d = extras(delayed);
    // Per layer and micro-batch: the QKV and FC1 inputs (column-parallel) and the proj and
    // FC2 output gradients (row-parallel), one fp32 each over the TP group.
    EXPECT_EQ(c.amax_all_reduces - d.amax_all_reduces, 16 * 8 * 4) << fp8_all_gather;
    EXPECT_EQ(c.other_all_reduces, d.other_all_reduces);
    for (const Op& op : current.ops) {
      const std::string name = op_phase(op);
      if (op.comm && op.comm->kind == CollectiveKind::kAllReduce && op.comm->bytes_in == 4 &&
          (name == "forward" || name == "backward")) {
        EXPECT_EQ(op.comm->group_size, 2);
        EXPECT_EQ(op.comm->bytes_out, 4);
      }
    }
    // The amax and scale kernels as without TP (the shapes are TP's shares).
    EXPECT_EQ(c.of(kAmax), 16 * 8 * 6 + 8 * 4);
    EXPECT_EQ(c.of(kScale), 16 * 8 * 8 + 8 * 4);
    EXPECT_EQ(names_without_extras(current), names_without_extras(delayed));
  }
}

// tiny_moe: 2 MoE layers (4 experts, top 2, no shared experts), h 64, one micro-batch per rank.
TEST(LlmFp8CurrentScaling, GroupedLinearQuantizesEachLocalExpert) {
  for (const int ep : {2, 1}) {
    const int local = 4 / ep;
    const ParallelConfig parallel{.dp = 4, .ep = ep};
    const Trace current =
        generate_llm_rank(with_recipe(test_support::tiny_moe(), Fp8Recipe::kCurrent), parallel, 0);
    const Trace delayed =
        generate_llm_rank(with_recipe(test_support::tiny_moe(), Fp8Recipe::kDelayed), parallel, 0);
    const Extras c = extras(current), d = extras(delayed);
    EXPECT_EQ(c.of(kCast), d.of(kCast)) << "EP " << ep;
    EXPECT_EQ(c.cast_read, d.cast_read);
    // Per layer: attention as a dense layer's (amax kernels for proj's input and the QKV and
    // proj gradients, scales for those and QKV's norm-fed input); the experts' four grouped
    // operands (FC1 and FC2 inputs, FC2 and FC1 gradients) an amax and a scale per local
    // expert and the casts of the other experts launched from TE's loop; per iteration the QKV
    // and proj weights and each local expert's FC1 and FC2 weight an amax and a scale.
    EXPECT_EQ(c.of(kAmax), 2 * (3 + 4 * local + 2 + 2 * local)) << "EP " << ep;
    EXPECT_EQ(c.of(kScale), 2 * (4 + 4 * local + 2 + 2 * local)) << "EP " << ep;
    EXPECT_EQ(c.of(kCastLaunch), 2 * 4 * (local - 1)) << "EP " << ep;
    // The per-expert amax kernels read each grouped operand once in all: every cast but the
    // norm-fed QKV input (32 tokens x 64, bf16) reads its tensor once more.
    EXPECT_EQ(c.cast_read - c.amax_read, 2 * (32 * 64 * 2)) << "EP " << ep;
    EXPECT_EQ(names_without_extras(current), names_without_extras(delayed));
  }
}

TEST(LlmFp8CurrentScaling, NewLaunchesCostTheMeasuredLaunchFloor) {
  validation::CalibrationPoint point;
  point.host_us_per_forward_op = point.host_us_per_backward_op = 56;
  const HostOverheads overheads = scenario::with_host_cost({}, point);
  for (const std::string& name : {kAmax, kScale, kCastLaunch})
    EXPECT_DOUBLE_EQ(overheads.t1_us(name), scenario::kMeasuredLaunchUs) << name;
  EXPECT_DOUBLE_EQ(overheads.t1_us(kCast), 56);
  point.host_us_per_forward_op = point.host_us_per_backward_op = 5;  // cheaper than the floor
  EXPECT_DOUBLE_EQ(scenario::with_host_cost({}, point).t1_us(kAmax), 5);
}

TEST(LlmFp8CurrentScaling, RecipeNamesAndRefusals) {
  EXPECT_EQ(parse_fp8_recipe("delayed", "t", "f"), Fp8Recipe::kDelayed);
  EXPECT_EQ(parse_fp8_recipe("current", "t", "f"), Fp8Recipe::kCurrent);
  EXPECT_EQ(parse_fp8_recipe("tensorwise", "t", "f"), Fp8Recipe::kCurrent);
  EXPECT_EQ(fp8_recipe_name(Fp8Recipe::kCurrent), "current");
  EXPECT_THROW(parse_fp8_recipe("mxfp8", "t", "f"), InputError);
  // Current scaling scales FP8 casts: a bf16 model has none.
  TransformerConfig model = test_support::tiny_gpt();
  model.fp8_recipe = Fp8Recipe::kCurrent;
  try {
    validate(model, "m");
    ADD_FAILURE() << "bf16 with current scaling accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "fp8_recipe");
  }
  // The run table's column; a bad cell is the row's error, naming the column.
  const std::string header =
      "name,model,seq_len,gpus,tp,pp,dp,micro_batch,global_batch,dtype,device,topology,"
      "measured_iteration_s,fp8_recipe\n";
  auto row = [&](const std::string& cell) {
    return header + "r,small,1024,8,1,1,8,1,32,fp8,H100-SXM,hgx-h100,1.0," + cell + "\n";
  };
  EXPECT_EQ(validation::parse_run_table(row("current"), "t.csv").rows.at(0).fp8_recipe, "current");
  EXPECT_EQ(validation::parse_run_table(row("tensorwise"), "t.csv").rows.at(0).fp8_recipe,
            "tensorwise");
  EXPECT_EQ(validation::parse_run_table(row(""), "t.csv").rows.at(0).fp8_recipe, "");
  const std::string error = validation::parse_run_table(row("hybrid"), "t.csv").rows.at(0).error;
  EXPECT_NE(error.find("fp8_recipe"), std::string::npos) << error;
}

}  // namespace
}  // namespace perfsim::generators::llm

namespace perfsim::scenario {
namespace {

// Through the engine on one node with the shipped calibration: current scaling adds GPU work
// (a read per operand) and host launches, so the iteration is longer than delayed scaling's,
// by more with more local experts (EP 2: 4 local experts per rank; EP 8: 1).
TEST(LlmFp8CurrentScalingSimulation, CurrentScalingCostsMoreWithMoreLocalExperts) {
  const std::string topology =
      std::string(PERFSIM_SOURCE_DIR) + "/configs/topologies/hgx-h100.json";
  auto iteration_us = [&](int ep, generators::llm::Fp8Recipe recipe) {
    generators::llm::TransformerConfig model = test_support::small_moe(2, 8);
    model.dtype = DType::kFloat8;
    model.fp8_recipe = recipe;
    LlmScenario scenario = test_support::h100_sxm_scenario(model, {.dp = 8, .ep = ep},
                                                           topology::load_topology(topology), true);
    scenario.calibration = calibration_argument("", "H100-SXM");
    return simulate_layout(scenario, SimulatedRanks::kAll).summary.iteration_us;
  };
  const double extra_ep8 = iteration_us(8, generators::llm::Fp8Recipe::kCurrent) -
                           iteration_us(8, generators::llm::Fp8Recipe::kDelayed);
  const double extra_ep2 = iteration_us(2, generators::llm::Fp8Recipe::kCurrent) -
                           iteration_us(2, generators::llm::Fp8Recipe::kDelayed);
  EXPECT_GT(extra_ep8, 0);
  EXPECT_GT(extra_ep2, extra_ep8);
}

}  // namespace
}  // namespace perfsim::scenario
