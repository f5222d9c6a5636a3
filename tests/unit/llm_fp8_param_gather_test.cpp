// FP8 primary weights (--fp8-param-gather; README "FP8 primary weights"): on small generated
// cases, exact counts and bytes of what changes against the bf16-weight FP8 recipe: the
// per-iteration weight work (a transpose per weight instead of an amax, cast and transpose),
// the parameter all-gathers (linear weights in FP8, the rest in bf16), the optimizer's
// quantization of the main weights with its amax reduction over DP, the refusals; and the
// direction of the effect through the engine.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "perfsim/error.hpp"
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

const std::string kTranspose(kFp8WeightTransposeOpName);
const std::string kMasterCast(kFp8MasterCastOpName);
const std::string kAmax(kFp8AmaxOpName);

TransformerConfig fp8_gpt(Fp8Recipe recipe = Fp8Recipe::kDelayed) {
  TransformerConfig model = test_support::tiny_gpt();  // 8 layers, h 256, FFN 1024
  model.dtype = DType::kFloat8;
  model.fp8_recipe = recipe;
  return model;
}

ParallelConfig dp2_distributed(bool fp8_params) {
  ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 2};
  parallel.zero_stage = 1;
  parallel.fp8_param_gather = fp8_params;
  return parallel;
}

// The linear weights of tiny_gpt: QKV 256 x 768, proj 256 x 256, FC1 256 x 1024 and FC2
// 1024 x 256 per layer, 8 layers.
constexpr std::int64_t kLinearPerLayer = 256 * 768 + 256 * 256 + 2 * 256 * 1024;
constexpr std::int64_t kLinear = 8 * kLinearPerLayer;

struct WeightWork {
  std::map<std::string, int> ops;  // by name, outside the optimizer
  Bytes transpose_read = 0, transpose_written = 0;
  // The optimizer step's ops by name, the main-weight elements its casts read, the fp32 amax
  // all-reduces over DP and their bytes.
  std::map<std::string, int> optimizer_ops;
  std::int64_t cast_elements = 0;
  int amax_all_reduces = 0;
  Bytes amax_bytes = 0;
  std::vector<int> amax_group_sizes;
  // The parameter all-gathers' output bytes by dtype; the gradient reduce-scatters' input bytes.
  std::map<DType, Bytes> gathered;
  Bytes reduce_scattered = 0;
  int of(const std::string& name) const {
    const auto found = ops.find(name);
    return found == ops.end() ? 0 : found->second;
  }
  int optimizer_of(const std::string& name) const {
    const auto found = optimizer_ops.find(name);
    return found == optimizer_ops.end() ? 0 : found->second;
  }
};

WeightWork weight_work(const Trace& trace) {
  WeightWork work;
  for (const Op& op : trace.ops) {
    if (op.is_annotation)
      continue;
    const std::string phase = op_phase(op);
    if (op.comm && op.comm->kind == CollectiveKind::kAllGather && phase == "param-gather")
      work.gathered[op.outputs.at(0).dtype] += op.comm->bytes_out;
    if (op.comm && op.comm->kind == CollectiveKind::kReduceScatter)
      work.reduce_scattered += op.comm->bytes_in;
    if (phase == "optimizer") {
      ++work.optimizer_ops[op.name];
      if (op.name == kMasterCast)
        work.cast_elements += op.inputs.at(0).numel;
      if (op.comm && op.comm->kind == CollectiveKind::kAllReduce) {
        ++work.amax_all_reduces;
        work.amax_bytes += op.comm->bytes_in;
        work.amax_group_sizes.push_back(op.comm->group_size);
      }
      continue;
    }
    ++work.ops[op.name];
    if (op.name == kTranspose) {
      work.transpose_read += op.inputs.at(0).bytes();
      work.transpose_written += op.outputs.at(0).bytes();
    }
  }
  return work;
}

TEST(LlmFp8ParamGather, WeightsAreTransposedNotCastEachIteration) {
  const WeightWork copies = weight_work(generate_llm_rank(fp8_gpt(), dp2_distributed(false), 0));
  const WeightWork primary = weight_work(generate_llm_rank(fp8_gpt(), dp2_distributed(true), 0));
  // 4 weights per layer, once per iteration: their cast-transposes give way to transposes.
  EXPECT_EQ(copies.of(kTranspose), 0);
  EXPECT_EQ(primary.of(kTranspose), 8 * 4);
  EXPECT_EQ(copies.of("te::cast_transpose") - primary.of("te::cast_transpose"), 8 * 4);
  // Each reads the E4M3 weight and writes its transpose: a byte each way per element.
  EXPECT_EQ(primary.transpose_read, kLinear);
  EXPECT_EQ(primary.transpose_written, kLinear);
  // Nothing else of the forward and backward changes: every other op as often, but for the
  // DP reduce-scatter, in two buckets (the FP8 weights' and the rest's, reduced together at
  // the end as partition_buckets groups them) of the same bytes.
  for (const auto& [name, count] : copies.ops) {
    if (name != "te::cast_transpose" && name.rfind("nccl:", 0) != 0) {
      EXPECT_EQ(primary.of(name), count) << name;
    }
  }
  EXPECT_EQ(copies.of("nccl:reduce_scatter"), 1);
  EXPECT_EQ(primary.of("nccl:reduce_scatter"), 2);
  EXPECT_EQ(primary.reduce_scattered, copies.reduce_scattered);
}

TEST(LlmFp8ParamGather, GathersLinearWeightsInFp8AndTheRestInBf16) {
  const WeightWork copies = weight_work(generate_llm_rank(fp8_gpt(), dp2_distributed(false), 0));
  const WeightWork primary = weight_work(generate_llm_rank(fp8_gpt(), dp2_distributed(true), 0));
  ASSERT_EQ(copies.gathered.size(), 1u);
  const Bytes all_bf16 = copies.gathered.at(DType::kBFloat16);
  EXPECT_EQ(primary.gathered.at(DType::kFloat8), kLinear);
  EXPECT_EQ(primary.gathered.at(DType::kBFloat16), all_bf16 - 2 * kLinear);
}

TEST(LlmFp8ParamGather, OptimizerQuantizesItsShardAndReducesTheAmaxesOverDp) {
  const WeightWork copies = weight_work(generate_llm_rank(fp8_gpt(), dp2_distributed(false), 0));
  EXPECT_EQ(copies.optimizer_of(kMasterCast), 0);
  EXPECT_EQ(copies.amax_all_reduces, 0);
  // Delayed scaling: a cast per fragment of the shard (32 weights over 2 ranks in one bucket:
  // 16 + 1 fragments), then one MAX all-reduce of the 32 weights' fp32 amaxes.
  const WeightWork delayed = weight_work(generate_llm_rank(fp8_gpt(), dp2_distributed(true), 0));
  EXPECT_EQ(delayed.optimizer_of(kMasterCast), 17);
  EXPECT_EQ(delayed.optimizer_of(kAmax), 0);
  EXPECT_EQ(delayed.cast_elements, kLinear / 2);
  EXPECT_EQ(delayed.amax_all_reduces, 1);
  EXPECT_EQ(delayed.amax_bytes, 32 * 4);
  EXPECT_EQ(delayed.amax_group_sizes, std::vector<int>{2});
  // Current scaling: an amax kernel per fragment before the all-reduce, then the casts.
  const WeightWork current =
      weight_work(generate_llm_rank(fp8_gpt(Fp8Recipe::kCurrent), dp2_distributed(true), 0));
  EXPECT_EQ(current.optimizer_of(kAmax), 17);
  EXPECT_EQ(current.optimizer_of(kMasterCast), 17);
  EXPECT_EQ(current.amax_all_reduces, 1);
  EXPECT_EQ(current.amax_bytes, 32 * 4);
}

TEST(LlmFp8ParamGather, EachChunksBf16RestIsGatheredAheadOfItsFirstFp8Bucket) {
  // overlap_param_gather, PP 2 x 2 chunks: stage 0 holds layers 0-1 and 4-5 (two DDPs, one per
  // chunk). Megatron's partition_buckets puts a chunk's non-FP8 buckets in the group of its FP8
  // buffer's last bucket, the chunk's first layers, which wait for the whole group: issued on
  // the DP stream ahead of that FP8 bucket, the bf16 gather ends before the layers read it.
  ParallelConfig parallel{.tp = 1, .pp = 2, .dp = 2};
  parallel.virtual_stages = 2;
  parallel.zero_stage = 1;
  parallel.overlap_grad_reduce = parallel.overlap_param_gather = true;
  parallel.fp8_param_gather = true;
  const Trace trace = generate_llm_rank(fp8_gpt(), parallel, 0);
  std::vector<DType> gathered;  // the forward's parameter gathers, in issue order
  Bytes bf16 = 0;
  for (const Op& op : trace.ops)
    if (op.comm && op.comm->kind == CollectiveKind::kAllGather && op_phase(op) == "param-gather") {
      gathered.push_back(op.outputs.at(0).dtype);
      if (op.outputs.at(0).dtype == DType::kBFloat16)
        bf16 += op.comm->bytes_out;
    }
  // One bucket of FP8 linear weights per chunk (2 layers, under the bucket size), each after
  // its chunk's bf16 rest.
  const std::vector<DType> expected{DType::kBFloat16, DType::kFloat8, DType::kBFloat16,
                                    DType::kFloat8};
  EXPECT_EQ(gathered, expected);
  // The rests: 4 layers' two norm weights (256 each, bf16) and the first stage's embedding
  // (2048 x 256).
  EXPECT_EQ(bf16, 2 * (4 * 2 * 256 + 2048 * 256));
}

TEST(LlmFp8ParamGather, ExpertWeightsAreGatheredInFp8AndTransposedPerExpert) {
  TransformerConfig model = test_support::tiny_moe();  // 2 layers, 4 experts
  model.dtype = DType::kFloat8;
  ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 4, .ep = 2};
  parallel.zero_stage = 1;
  parallel.fp8_param_gather = true;
  const WeightWork work = weight_work(generate_llm_rank(model, parallel, 0));
  // Per MoE layer: QKV and proj (no shared experts), and FC1 and FC2 of each of the 2 local
  // experts.
  EXPECT_EQ(work.of(kTranspose), 2 * (2 + 2 * 2));
  EXPECT_GT(work.of("te::cast_transpose"), 0);  // the inputs and gradients are still cast
  // The dense optimizer's amaxes over DP 4 (QKV and proj of 2 layers), the experts' over
  // expert-DP 2 (2 x 2 local experts' FC1 and FC2).
  EXPECT_EQ(work.amax_group_sizes, (std::vector<int>{4, 2}));
  EXPECT_EQ(work.amax_bytes, (4 + 8) * 4);
  // Expert weights (2 local x (64 x 128 + 128 x 64) x 2 layers) gathered over expert-DP 2 in
  // FP8, beside the dense linear weights.
  const Bytes experts = 2 * 2 * (64 * 128 + 128 * 64);
  const Bytes dense_linear = 2 * (64 * 192 + 64 * 64);
  EXPECT_EQ(work.gathered.at(DType::kFloat8), experts + dense_linear);
}

TEST(LlmFp8ParamGather, Refusals) {
  auto problem = [](TransformerConfig model, ParallelConfig parallel) {
    try {
      validate(model, parallel);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  ParallelConfig parallel = dp2_distributed(true);
  EXPECT_EQ(problem(fp8_gpt(), parallel), "");
  EXPECT_NE(problem(test_support::tiny_gpt(), parallel).find("FP8 recipe"), std::string::npos);
  EXPECT_NE(problem(fp8_gpt(Fp8Recipe::kBlockwise), parallel).find("blockwise"), std::string::npos);
  parallel.zero_stage = 0;
  EXPECT_NE(problem(fp8_gpt(), parallel).find("distributed optimizer"), std::string::npos);
  parallel.zero_stage = 3;
  EXPECT_NE(problem(fp8_gpt(), parallel).find("distributed optimizer"), std::string::npos);
}

}  // namespace
}  // namespace perfsim::generators::llm

namespace perfsim::scenario {
namespace {

// Through the engine on one H100 node with the shipped calibration, a layout whose weight work
// is not hidden (DP 8, ZeRO 1, no overlap): FP8 primary weights read and write fewer bytes per
// iteration (a transpose in place of amax, cast and transpose; FP8 all-gathers of the linear
// weights) than bf16 weights with FP8 copies, so the iteration is shorter.
TEST(LlmFp8ParamGatherSimulation, FasterThanCastingBf16WeightsEachIteration) {
  const std::string topology =
      std::string(PERFSIM_SOURCE_DIR) + "/configs/topologies/hgx-h100.json";
  auto iteration_us = [&](bool fp8_params) {
    generators::llm::TransformerConfig model = test_support::tiny_gpt();
    model.hidden = 2048;
    model.heads = 16;
    model.kv_heads = 16;
    model.ffn_hidden = 8192;
    model.layers = 4;
    model.seq_len = 1024;
    model.micro_batch = 1;
    model.global_batch = 16;
    model.dtype = DType::kFloat8;
    generators::llm::ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 8};
    parallel.zero_stage = 1;
    parallel.fp8_param_gather = fp8_params;
    LlmScenario scenario =
        test_support::h100_sxm_scenario(model, parallel, topology::load_topology(topology), true);
    scenario.calibration = calibration_argument("", "H100-SXM");
    return simulate_layout(scenario, SimulatedRanks::kAll).summary.iteration_us;
  };
  const double copies = iteration_us(false);
  const double primary = iteration_us(true);
  EXPECT_LT(primary, copies);
}

}  // namespace
}  // namespace perfsim::scenario
