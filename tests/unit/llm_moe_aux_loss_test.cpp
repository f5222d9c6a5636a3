// The router's load-balancing auxiliary loss (Megatron-Core's default aux_loss, Switch
// Transformer eq. 4), unfused (moe_router_fusion off, Megatron-Core's default): per MoE layer and
// micro-batch, forward sums the loss's routing map and scores over the tokens ([tokens, experts]
// each), all-reduces the experts' token counts over TP (the other ranks hold the rest of the
// sequence), and takes the scaled dot product; backward adds the loss's share to the logits'
// gradient. Counted on a 2-layer case.
#include <gtest/gtest.h>

#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

using test_support::tiny_moe;

struct AuxLossOps {
  int token_sums = 0;         // aten::sum over a [tokens, 4] tensor into fp32
  Bytes token_sum_bytes = 0;  // what they read
  int count_all_reduces = 0;  // all-reduces of the 4 experts' fp32 counts
  int gradient_adds = 0;      // aten::add writing [tokens, 4] in backward
};

AuxLossOps aux_loss_ops(const ParallelConfig& parallel, std::int64_t tokens) {
  AuxLossOps ops;
  for (const Op& op : generate_llm_rank(tiny_moe(), parallel, 0).ops) {
    const std::vector<std::int64_t> per_token{tokens, 4};
    // The loss's sums write fp32; the dispatcher's own int64 count of the routing map
    // (llm_moe_host_path.cpp) is not the loss's.
    if (op.name == "aten::sum" && op.inputs.at(0).shape == per_token &&
        op.outputs.at(0).dtype == DType::kFloat32) {
      ++ops.token_sums;
      ops.token_sum_bytes +=
          static_cast<Bytes>(op.inputs.at(0).numel) * element_bytes(op.inputs.at(0).dtype);
    }
    if (op.comm && op.comm->kind == CollectiveKind::kAllReduce && op.comm->bytes_in == 4 * 4) {
      ++ops.count_all_reduces;
      EXPECT_EQ(op.comm->process_group.rfind("tp/", 0), 0u);
    }
    if (op.name == "aten::add" && op.outputs.at(0).shape == per_token) {
      ++ops.gradient_adds;
      EXPECT_EQ(op_phase(op), "backward");
    }
  }
  return ops;
}

TEST(LlmMoeAuxLoss, KernelsPerLayerAndMicroBatch) {
  // TP 1: 32 tokens per rank; no all-reduce. Two sums per layer: the loss's routing map (bool,
  // 1 byte) and its scores (bf16 here; fp32 in Megatron-Core, kept in the activation dtype for
  // the memory closed form): 2 layers x 32 x 4 x (1 + 2) bytes read.
  const AuxLossOps tp1 = aux_loss_ops({.dp = 4, .ep = 2}, 32);
  EXPECT_EQ(tp1.token_sums, 2 * 2);
  EXPECT_EQ(tp1.token_sum_bytes, 2 * 32 * 4 * (1 + 2));
  EXPECT_EQ(tp1.count_all_reduces, 0);
  EXPECT_EQ(tp1.gradient_adds, 2);
  // TP 2 with SP: 16 tokens per rank, and one all-reduce of 4 fp32 counts per layer.
  const AuxLossOps tp2 = aux_loss_ops({.tp = 2, .dp = 4, .ep = 2, .sequence_parallel = true}, 16);
  EXPECT_EQ(tp2.token_sums, 2 * 2);
  EXPECT_EQ(tp2.token_sum_bytes, 2 * 16 * 4 * (1 + 2));
  EXPECT_EQ(tp2.count_all_reduces, 2);
  EXPECT_EQ(tp2.gradient_adds, 2);
}

TEST(LlmMoeAuxLoss, FullRecomputationRunsItAgain) {
  // Megatron recomputes the whole layer, router and loss included, before its backward.
  ParallelConfig parallel{.tp = 2, .dp = 4, .ep = 2, .sequence_parallel = true};
  parallel.recompute = Recompute::kFull;
  const AuxLossOps ops = aux_loss_ops(parallel, 16);
  EXPECT_EQ(ops.token_sums, 2 * 2 * 2);
  EXPECT_EQ(ops.count_all_reduces, 2 * 2);
}

}  // namespace
}  // namespace perfsim::generators::llm
