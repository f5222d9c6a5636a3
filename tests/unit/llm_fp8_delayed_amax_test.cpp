// FP8 delayed scaling's amax reductions (Transformer Engine's reduce_and_update_fp8_tensors;
// generator README "FP8"): on small generated cases, exact counts, bytes, groups and places of
// the per-region amax concatenation, all-reduce and fused history/scale update, and none under
// current or blockwise scaling.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "perfsim/trace.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

const std::string kUpdate(kFp8AmaxScaleUpdateOpName);

// One region's reduction as the trace shows it: the phase it runs in, the amaxes it updates,
// and its all-reduce (bytes and group size; 0 without one).
struct AmaxReduction {
  std::string phase;
  std::int64_t amaxes = 0;
  Bytes reduced_bytes = 0;
  int group_size = 0;
  std::string group;
};

std::vector<AmaxReduction> amax_reductions(const Trace& trace) {
  std::vector<AmaxReduction> reductions;
  std::vector<const Op*> pending;  // all-reduces on the amax stream not yet matched
  for (const Op& op : trace.ops) {
    if (op.is_annotation)
      continue;
    const bool on_amax_stream =
        !op.kernels.empty() && op.kernels.front().stream == kAmaxReductionStream;
    if (op.comm && on_amax_stream) {
      EXPECT_EQ(op.comm->kind, CollectiveKind::kAllReduce);
      pending.push_back(&op);
    }
    if (op.name != kUpdate)
      continue;
    AmaxReduction reduction;
    reduction.phase = op_phase(op);
    reduction.amaxes = op.inputs.at(0).numel;
    if (!pending.empty()) {
      reduction.reduced_bytes = pending.back()->comm->bytes_in;
      reduction.group_size = pending.back()->comm->group_size;
      reduction.group = pending.back()->comm->process_group;
      pending.pop_back();
    }
    EXPECT_TRUE(pending.empty()) << "an amax all-reduce without its update";
    reductions.push_back(reduction);
  }
  EXPECT_TRUE(pending.empty());
  return reductions;
}

TransformerConfig fp8_gpt(Fp8Recipe recipe) {
  TransformerConfig model = test_support::tiny_gpt();  // 8 layers, 4 linear modules each
  model.dtype = DType::kFloat8;
  model.fp8_recipe = recipe;
  return model;
}

int count_phase(const std::vector<AmaxReduction>& reductions, const std::string& phase) {
  int count = 0;
  for (const AmaxReduction& reduction : reductions)
    count += reduction.phase == phase ? 1 : 0;
  return count;
}

TEST(LlmFp8DelayedAmax, EachMicroBatchReducesItsForwardAndBackwardAmaxesOverTpDpCp) {
  const TransformerConfig model = fp8_gpt(Fp8Recipe::kDelayed);
  const ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 2};
  const int micro_batches = micro_batches_per_iteration(model, parallel);
  ASSERT_EQ(micro_batches, 8);
  const std::vector<AmaxReduction> reductions =
      amax_reductions(generate_llm_rank(model, parallel, 0));
  ASSERT_EQ(reductions.size(), 2u * micro_batches);
  EXPECT_EQ(count_phase(reductions, "forward"), micro_batches);
  EXPECT_EQ(count_phase(reductions, "backward"), micro_batches);
  for (const AmaxReduction& reduction : reductions) {
    // 8 layers x 4 GEMMs: 3 fp32 amaxes each in the forward, 2 in the backward.
    const std::int64_t amaxes = reduction.phase == "forward" ? 8 * 4 * 3 : 8 * 4 * 2;
    EXPECT_EQ(reduction.amaxes, amaxes) << reduction.phase;
    EXPECT_EQ(reduction.reduced_bytes, amaxes * 4) << reduction.phase;
    EXPECT_EQ(reduction.group_size, 4);  // TP 2 x DP 2: the stage's every rank
  }
  // The amax reduction group is the stage's TP x DP x CP group, the one the expert-bias update
  // uses (Megatron's tp_dp_cp group), by the rank's real group name.
  EXPECT_EQ(reductions.front().group, tp_dp_cp_group_name(parallel, 0));
}

TEST(LlmFp8DelayedAmax, ContextParallelismJoinsTheGroupAndOneRankUpdatesWithoutReducing) {
  const TransformerConfig model = fp8_gpt(Fp8Recipe::kDelayed);
  ParallelConfig with_cp{.tp = 2, .pp = 1, .dp = 1};
  with_cp.cp = 2;
  for (const AmaxReduction& reduction : amax_reductions(generate_llm_rank(model, with_cp, 0)))
    EXPECT_EQ(reduction.group_size, 4);
  const ParallelConfig alone{.tp = 1, .pp = 1, .dp = 1};
  const std::vector<AmaxReduction> reductions = amax_reductions(generate_llm_rank(model, alone, 0));
  ASSERT_EQ(reductions.size(), 2u * micro_batches_per_iteration(model, alone));
  for (const AmaxReduction& reduction : reductions)
    EXPECT_EQ(reduction.group_size, 0);  // no all-reduce over a group of one (TE's check)
}

TEST(LlmFp8DelayedAmax, EachPipelineChunkIsItsOwnRegionAndReducesTheWholeRank) {
  // PP 2 x 2 virtual stages: stage 0 holds layers 0-1 and 4-5, each chunk two layers. Each
  // chunk's exit reduces TE's whole buffer: both chunks' 4 layers x 4 GEMMs.
  const TransformerConfig model = fp8_gpt(Fp8Recipe::kDelayed);
  ParallelConfig parallel{.tp = 1, .pp = 2, .dp = 1};
  parallel.virtual_stages = 2;
  const int micro_batches = micro_batches_per_iteration(model, parallel);
  const std::vector<AmaxReduction> reductions =
      amax_reductions(generate_llm_rank(model, parallel, 0));
  ASSERT_EQ(reductions.size(), 2u * 2 * micro_batches);
  for (const AmaxReduction& reduction : reductions)
    EXPECT_EQ(reduction.amaxes, 4 * 4 * (reduction.phase == "forward" ? 3 : 2));
}

TEST(LlmFp8DelayedAmax, GroupedLinearsRecordPerLocalExpertAndMtpModulesAddTwoRegions) {
  TransformerConfig moe = test_support::tiny_moe();  // 2 layers, 4 experts, no shared experts
  moe.dtype = DType::kFloat8;
  ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 2};
  parallel.ep = 2;
  const std::vector<AmaxReduction> reductions =
      amax_reductions(generate_llm_rank(moe, parallel, 0));
  ASSERT_FALSE(reductions.empty());
  // Per layer: QKV and proj, then each of the 2 local experts' FC1 and FC2 GEMMs.
  const std::int64_t gemms = 2 * (2 + 2 * 2);
  for (const AmaxReduction& reduction : reductions)
    EXPECT_EQ(reduction.amaxes, gemms * (reduction.phase == "forward" ? 3 : 2));

  TransformerConfig mtp = fp8_gpt(Fp8Recipe::kDelayed);
  mtp.mtp_num_layers = 1;
  const ParallelConfig dp1{.tp = 1, .pp = 1, .dp = 1};
  const int micro_batches = micro_batches_per_iteration(mtp, dp1);
  const std::vector<AmaxReduction> with_mtp = amax_reductions(generate_llm_rank(mtp, dp1, 0));
  // The decoder's region, then the module's eh_proj's and its layer's: three per pass, each of
  // the rank's every GEMM (8 layers x 4, eh_proj, the module's layer's 4).
  ASSERT_EQ(with_mtp.size(), 2u * 3 * micro_batches);
  for (const AmaxReduction& reduction : with_mtp)
    EXPECT_EQ(reduction.amaxes, (8 * 4 + 1 + 4) * (reduction.phase == "forward" ? 3 : 2));
}

TEST(LlmFp8DelayedAmax, CurrentAndBlockwiseScalingKeepNoAmaxHistory) {
  const ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 2};
  for (const Fp8Recipe recipe : {Fp8Recipe::kCurrent, Fp8Recipe::kBlockwise})
    EXPECT_TRUE(amax_reductions(generate_llm_rank(fp8_gpt(recipe), parallel, 0)).empty());
  TransformerConfig bf16 = test_support::tiny_gpt();
  EXPECT_TRUE(amax_reductions(generate_llm_rank(bf16, parallel, 0)).empty());
}

}  // namespace
}  // namespace perfsim::generators::llm
