// FP8 blockwise scaling (README "FP8 blockwise scaling"): on small generated cases, the trace
// is delayed scaling's op for op except the per-expert cast launches of grouped operands (no
// amax or scale kernels, no amax all-reduce); every FP8 GEMM, forward and backward, carries
// the block-scaling attribute and no bf16 GEMM does; its TP gathers move bf16's bytes with or
// without the per-tensor FP8 all-gather; the kernel model prices a block-scaled
// forward GEMM as the split-accumulator backward one; the recipe's names and refusals; and the
// direction of the effect through the engine.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "kernels/fp8_block_scaling.hpp"
#include "kernels/op_kernel_registry.hpp"
#include "perfsim/error.hpp"
#include "perfsim/trace.hpp"
#include "scenario/llm_calibration.hpp"
#include "scenario/plan_simulation.hpp"
#include "support/delayed_amax_updates.hpp"
#include "support/h100_sxm_scenario.hpp"
#include "support/op_phase.hpp"
#include "support/small_gpt.hpp"
#include "support/tiny_llm.hpp"
#include "topology/topology.hpp"
#include "validation/run_table.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

const std::string kCastLaunch(kFp8ExpertCastLaunchOpName);

TransformerConfig with_recipe(TransformerConfig model, Fp8Recipe recipe) {
  model.dtype = DType::kFloat8;
  model.fp8_recipe = recipe;
  return model;
}

bool block_scaled(const Op& op) {
  return op.find_attribute(kFp8BlockScalingAttribute) != nullptr;
}

bool reads_fp8(const Op& op) {
  for (const TensorRef& input : op.inputs)
    if (input.dtype == DType::kFloat8)
      return true;
  return false;
}

// The trace's op names but `skipped`'s and those of delayed scaling's amax history updates
// (blockwise scaling keeps no amax history).
std::vector<std::string> names_without(const Trace& trace, const std::string& skipped) {
  const std::set<std::int64_t> delayed_updates = test_support::delayed_amax_update_ops(trace);
  std::vector<std::string> names;
  for (const Op& op : trace.ops)
    if (op.name != skipped && delayed_updates.count(op.id) == 0)
      names.push_back(op.name);
  return names;
}

int count(const Trace& trace, const std::string& name) {
  int n = 0;
  for (const Op& op : trace.ops)
    n += op.name == name ? 1 : 0;
  return n;
}

// tiny_gpt: 8 layers, 16 micro-batches; per layer and micro-batch 4 forward, 4 data-gradient
// and 4 weight-gradient FP8 GEMMs (QKV, proj, FC1, FC2), the attention bf16.
TEST(LlmFp8Blockwise, DenseTraceIsDelayedScalingsWithBlockScaledFp8Gemms) {
  for (const bool sp : {false, true}) {
    ParallelConfig parallel{.tp = sp ? 2 : 1, .pp = 1, .dp = 1, .sequence_parallel = sp};
    // Blockwise gathers its row- and column-wise FP8 data, as many bytes as bf16: the same
    // trace with and without the per-tensor FP8 gather, and delayed's with the bf16 gather.
    const Trace blockwise_fp8_gather = generate_llm_rank(
        with_recipe(test_support::tiny_gpt(), Fp8Recipe::kBlockwise), parallel, 0);
    parallel.fp8_all_gather = false;
    const Trace delayed =
        generate_llm_rank(with_recipe(test_support::tiny_gpt(), Fp8Recipe::kDelayed), parallel, 0);
    const Trace blockwise = generate_llm_rank(
        with_recipe(test_support::tiny_gpt(), Fp8Recipe::kBlockwise), parallel, 0);
    ASSERT_EQ(names_without(blockwise, ""), names_without(delayed, "")) << "SP " << sp;
    ASSERT_EQ(names_without(blockwise_fp8_gather, ""), names_without(blockwise, ""));
    for (std::size_t i = 0; i < blockwise.ops.size(); ++i) {
      if (blockwise.ops[i].comm) {
        EXPECT_EQ(blockwise.ops[i].comm->bytes_in, blockwise_fp8_gather.ops[i].comm->bytes_in);
      }
    }
    int scaled = 0, forward_scaled = 0;
    for (std::size_t i = 0; i < blockwise.ops.size(); ++i) {
      const Op& op = blockwise.ops[i];
      EXPECT_FALSE(block_scaled(delayed.ops[i]));
      const bool fp8_gemm = !op.kernels.empty() &&
                            op.kernels.front().category == KernelCategory::kGemm && reads_fp8(op);
      EXPECT_EQ(block_scaled(op), fp8_gemm) << op.name;
      if (!block_scaled(op))
        continue;
      ++scaled;
      forward_scaled += op_phase(op) == "forward" ? 1 : 0;
      // The same collectives: no amax reduction (each block's scale is local).
      if (op.comm)
        ADD_FAILURE() << "a collective marked block-scaled";
    }
    EXPECT_EQ(scaled, 16 * 8 * 12) << "SP " << sp;
    EXPECT_EQ(forward_scaled, 16 * 8 * 4) << "SP " << sp;
  }
}

// tiny_moe: 2 MoE layers, 4 experts; its four grouped operands per layer quantized per expert
// from TE's loop: one launch more per further local expert, no amax or scale kernels.
TEST(LlmFp8Blockwise, GroupedOperandsAreQuantizedPerExpertWithoutAmaxKernels) {
  for (const int ep : {2, 1}) {
    const int local = 4 / ep;
    const ParallelConfig parallel{.dp = 4, .ep = ep};
    const Trace delayed =
        generate_llm_rank(with_recipe(test_support::tiny_moe(), Fp8Recipe::kDelayed), parallel, 0);
    const Trace blockwise = generate_llm_rank(
        with_recipe(test_support::tiny_moe(), Fp8Recipe::kBlockwise), parallel, 0);
    EXPECT_EQ(count(blockwise, kCastLaunch), 2 * 4 * (local - 1)) << "EP " << ep;
    EXPECT_EQ(count(blockwise, std::string(kFp8AmaxOpName)), 0);
    EXPECT_EQ(count(blockwise, std::string(kFp8ScaleOpName)), 0);
    EXPECT_EQ(names_without(blockwise, kCastLaunch), names_without(delayed, "")) << "EP " << ep;
  }
}

TensorRef fp8_matrix(std::int64_t rows, std::int64_t cols) {
  TensorRef t;
  t.shape = {rows, cols};
  t.numel = rows * cols;
  t.dtype = DType::kFloat8;
  t.element_bytes = 1;
  t.device = "cuda:0";
  return t;
}

TEST(LlmFp8Blockwise, BlockScaledForwardGemmCostsTheSplitAccumulatorsTime) {
  Op op;
  op.name = "aten::mm";
  op.inputs = {fp8_matrix(4096, 8192), fp8_matrix(8192, 8192)};
  op.attributes = {{"phase", std::string("forward")}};
  auto split = [](const Op& o) {
    const kernels::OpExpansion expansion = kernels::expand_op(o);
    EXPECT_EQ(expansion.kernels.size(), 1u);
    return std::get<kernels::GemmWork>(expansion.kernels.at(0).work).split_accumulator;
  };
  EXPECT_FALSE(split(op));
  Op scaled = op;
  scaled.attributes.push_back({std::string(kFp8BlockScalingAttribute), std::int64_t{1}});
  EXPECT_TRUE(split(scaled));
  Op backward = op;
  backward.attributes = {{"phase", std::string("backward")}};
  EXPECT_TRUE(split(backward));
}

TEST(LlmFp8Blockwise, RecipeNamesAndRefusals) {
  EXPECT_EQ(parse_fp8_recipe("blockwise", "t", "f"), Fp8Recipe::kBlockwise);
  EXPECT_EQ(fp8_recipe_name(Fp8Recipe::kBlockwise), "blockwise");
  TransformerConfig bf16 = test_support::tiny_gpt();
  bf16.fp8_recipe = Fp8Recipe::kBlockwise;
  EXPECT_THROW(validate(bf16, "m"), InputError);
  const std::string table =
      "name,model,seq_len,gpus,tp,pp,dp,micro_batch,global_batch,dtype,device,topology,"
      "measured_iteration_s,fp8_recipe\n"
      "r,small,1024,8,1,1,8,1,32,fp8,H100-SXM,hgx-h100,1.0,blockwise\n";
  EXPECT_EQ(validation::parse_run_table(table, "t.csv").rows.at(0).fp8_recipe, "blockwise");
}

}  // namespace
}  // namespace perfsim::generators::llm

namespace perfsim::scenario {
namespace {

// Through the engine on one node with the shipped calibration, a GEMM-bound dense layout (h
// 8192, sequence 4096): blockwise pays the block-scaled main loop in the forward GEMMs too, so
// it is slower than delayed scaling and faster than bf16.
TEST(LlmFp8BlockwiseSimulation, BetweenDelayedScalingAndBf16) {
  const std::string topology =
      std::string(PERFSIM_SOURCE_DIR) + "/configs/topologies/hgx-h100.json";
  auto iteration_us = [&](DType dtype, generators::llm::Fp8Recipe recipe) {
    generators::llm::TransformerConfig model = test_support::small_gpt(2, 8192, 16);
    model.seq_len = 4096;
    model.dtype = dtype;
    model.fp8_recipe = recipe;
    LlmScenario scenario =
        test_support::h100_sxm_scenario(model, {.dp = 8}, topology::load_topology(topology), true);
    scenario.calibration = calibration_argument("", "H100-SXM");
    return simulate_layout(scenario, SimulatedRanks::kAll).summary.iteration_us;
  };
  using generators::llm::Fp8Recipe;
  const double delayed = iteration_us(DType::kFloat8, Fp8Recipe::kDelayed);
  const double blockwise = iteration_us(DType::kFloat8, Fp8Recipe::kBlockwise);
  const double bf16 = iteration_us(DType::kBFloat16, Fp8Recipe::kDelayed);
  std::cout << "bf16 " << bf16 << " us, delayed " << delayed << " us, blockwise " << blockwise
            << " us\n";
  EXPECT_GT(blockwise, delayed);
  EXPECT_LT(blockwise, bf16);
}

}  // namespace
}  // namespace perfsim::scenario
