// SequentialMLP, Megatron-Core's experts with moe_grouped_gemm off (README "Sequential
// experts"): per-rank op counts and GEMM shapes on the 2-layer tiny MoE (4 experts, top 2) at
// EP 2, so each rank runs 2 local experts on 64 routed rows (32 each) per micro-batch.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "generators/llm/llm_local_shapes.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "perfsim/error.hpp"
#include "perfsim/trace.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

struct Counts : test_support::PhaseOpCounts {
  double gemm_flops = 0;  // every aten::mm and te::grouped_gemm of the trace
  // FLOPs of the forward aten::mm ops, in trace order.
  std::vector<double> forward_mm_flops;
};

double flops_of(const Op& op) {
  return std::get<double>(op.find_attribute("flops")->value);
}

Counts count(const TransformerConfig& model, const ParallelConfig& parallel) {
  Counts c;
  const Trace trace = generate_llm_rank(model, parallel, 0);
  for (const Op& op : trace.ops) {
    if (op.is_annotation)
      continue;
    const std::string phase = op_phase(op);
    c.count(op, phase);
    if (op.name == "aten::mm" || op.name == "te::grouped_gemm")
      c.gemm_flops += flops_of(op);
    if (op.name == "aten::mm" && phase == "forward")
      c.forward_mm_flops.push_back(flops_of(op));
  }
  return c;
}

ParallelConfig ep2(bool grouped) {
  ParallelConfig parallel{.dp = 4, .ep = 2};
  parallel.moe_permute_fusion = true;
  parallel.moe_grouped_gemm = grouped;
  return parallel;
}

TEST(LlmMoeSequential, OneLinearPerExpertAndProjectionInsteadOfGroupedGemms) {
  const TransformerConfig model = test_support::tiny_moe();
  const Counts grouped = count(model, ep2(true));
  const Counts sequential = count(model, ep2(false));
  // Grouped: 2 grouped GEMMs forward and 4 backward per layer (2 layers).
  EXPECT_EQ(grouped.fwd("te::grouped_gemm"), 2 * 2);
  EXPECT_EQ(grouped.bwd("te::grouped_gemm"), 2 * 4);
  EXPECT_EQ(sequential.fwd("te::grouped_gemm") + sequential.bwd("te::grouped_gemm"), 0);
  // Sequential: per layer and local expert (2) FC1 and FC2 forward; their data and weight
  // gradients backward.
  EXPECT_EQ(sequential.fwd("aten::mm") - grouped.fwd("aten::mm"), 2 * 2 * 2);
  EXPECT_EQ(sequential.bwd("aten::mm") - grouped.bwd("aten::mm"), 2 * 2 * 4);
  // The activation per expert: 2 GeLUs per layer forward and 2 backward instead of 1.
  EXPECT_EQ(sequential.fwd("aten::gelu") - grouped.fwd("aten::gelu"), 2);
  EXPECT_EQ(sequential.bwd("aten::gelu_backward") - grouped.bwd("aten::gelu_backward"), 2);
  // torch.cat of the experts' outputs forward and of their input gradients backward.
  EXPECT_EQ(sequential.fwd("aten::cat") - grouped.fwd("aten::cat"), 2);
  EXPECT_EQ(sequential.bwd("aten::cat") - grouped.bwd("aten::cat"), 2);
  // The same arithmetic: 32 rows per expert, a multiple of nothing to pad in bf16.
  EXPECT_DOUBLE_EQ(sequential.gemm_flops, grouped.gemm_flops);
}

TEST(LlmMoeSequential, OneLocalExpertNeedsNoConcatenation) {
  TransformerConfig model = test_support::tiny_moe();
  ParallelConfig grouped{.dp = 4, .ep = 4};
  grouped.moe_permute_fusion = true;
  ParallelConfig sequential = grouped;
  sequential.moe_grouped_gemm = false;
  const Counts g = count(model, grouped);
  const Counts s = count(model, sequential);
  EXPECT_EQ(s.fwd("aten::cat"), g.fwd("aten::cat"));
  EXPECT_EQ(s.bwd("aten::cat"), g.bwd("aten::cat"));
  EXPECT_EQ(s.fwd("aten::mm") - g.fwd("aten::mm"), 2 * 2);
  EXPECT_DOUBLE_EQ(s.gemm_flops, g.gemm_flops);
}

TEST(LlmMoeSequential, Fp8PadsEachExpertsRowsToSixteen) {
  EXPECT_EQ(fp8_aligned_expert_rows(32), 32);
  EXPECT_EQ(fp8_aligned_expert_rows(33), 48);
  EXPECT_EQ(fp8_aligned_expert_rows(1), 16);
  // Sequence 36: 36 tokens x top 2 = 72 routed rows at EP 2, 36 per local expert, padded to 48.
  TransformerConfig model = test_support::tiny_moe();
  model.seq_len = 36;
  model.dtype = DType::kFloat8;
  const Counts bf16_like = count(model, ep2(true));
  const Counts sequential = count(model, ep2(false));
  // Per layer and expert: a zero tensor and a cat for the pad, then the outputs' cat per layer.
  EXPECT_EQ(sequential.fwd("aten::zeros") - bf16_like.fwd("aten::zeros"), 2 * 2);
  EXPECT_EQ(sequential.fwd("aten::cat") - bf16_like.fwd("aten::cat"), 2 * 2 + 2);
  // Backward: output[:n]'s padded gradient per expert, and the input gradients' cat per layer.
  EXPECT_EQ(sequential.bwd("aten::cat") - bf16_like.bwd("aten::cat"), 2 * 2 + 2);
  // Each expert's FC1 (h 64 into 128) and FC2 (128 into 64) run on 48 rows: find those GEMMs
  // among the forward's (2 layers x 2 experts x 2 projections).
  const double padded_gemm = 2.0 * 48 * 64 * 128;
  int found = 0;
  for (double flops : sequential.forward_mm_flops)
    found += flops == padded_gemm ? 1 : 0;
  EXPECT_EQ(found, 2 * 2 * 2);
  // So the experts compute 48 / 36 of the grouped layers' rows.
  const double expert_flops_grouped = 3 * 2.0 * 72 * 64 * 128 * 2 * 2;  // 3 GEMMs, 2 projections
  EXPECT_NEAR(sequential.gemm_flops - bf16_like.gemm_flops,
              expert_flops_grouped * (48.0 / 36.0 - 1.0), 1e-6 * expert_flops_grouped);
  // Every expert linear casts its own input (FP8 delayed scaling: one fused cast-transpose per
  // expert and linear, against one per grouped linear: 2 x 2 per layer against 2) and, at the
  // first micro-batch, its own weight (the same count against the grouped layers' 2 per layer).
  EXPECT_EQ(sequential.fwd("te::cast_transpose") - bf16_like.fwd("te::cast_transpose"),
            2 * (4 - 2) + 2 * (4 - 2));
}

TEST(LlmMoeSequential, MoeActRecomputeNeedsTheGroupedExperts) {
  ParallelConfig parallel = ep2(false);
  parallel.recompute = Recompute::kSelective;
  parallel.recompute_modules.moe_act = true;
  EXPECT_THROW(generate_llm_rank(test_support::tiny_moe(), parallel, 0), InputError);
}

}  // namespace
}  // namespace perfsim::generators::llm
