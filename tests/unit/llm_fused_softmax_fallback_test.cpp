// Megatron's FusedScaleMaskSoftmax availability rule and the ops the LLM generator emits when
// the fused causal kernel is not available (PyTorch's fp32 fallback): the rule against the
// kernel's own block geometry, and a generated rank's softmax ops counted for a shape on each
// side of the rule (micro-batch x heads per rank a multiple of 4, or not).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/megatron_fused_softmax.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

TEST(MegatronFusedSoftmax, BatchesPerBlockFollowTheWarpLayout) {
  // 128 threads per block: one 32-wide warp per row beyond 128 keys, two rows per warp up to
  // 128 keys, narrower warps (more of them) below 32 keys.
  EXPECT_EQ(megatron_fused_softmax_batches_per_block(1024), 4);
  EXPECT_EQ(megatron_fused_softmax_batches_per_block(2048), 4);
  EXPECT_EQ(megatron_fused_softmax_batches_per_block(129), 4);
  EXPECT_EQ(megatron_fused_softmax_batches_per_block(128), 8);
  EXPECT_EQ(megatron_fused_softmax_batches_per_block(32), 8);
  EXPECT_EQ(megatron_fused_softmax_batches_per_block(17), 8);   // padded to 32
  EXPECT_EQ(megatron_fused_softmax_batches_per_block(16), 16);  // 16-wide warps
}

TEST(MegatronFusedSoftmax, AvailabilityRule) {
  // vTrain's GPT shapes: 16 heads, sequence 1024.
  EXPECT_TRUE(megatron_fused_causal_softmax_available(16, 1024));   // TP 1, micro-batch 1
  EXPECT_TRUE(megatron_fused_causal_softmax_available(4, 1024));    // TP 4, micro-batch 1
  EXPECT_TRUE(megatron_fused_causal_softmax_available(4, 1024));    // TP 8, micro-batch 2
  EXPECT_FALSE(megatron_fused_causal_softmax_available(2, 1024));   // TP 8, micro-batch 1
  EXPECT_FALSE(megatron_fused_causal_softmax_available(6, 1024));   // not a multiple of 4
  EXPECT_FALSE(megatron_fused_causal_softmax_available(16, 8192));  // keys beyond 4096
  EXPECT_FALSE(megatron_fused_causal_softmax_available(16, 16));    // keys must exceed 16
  EXPECT_FALSE(megatron_fused_causal_softmax_available(16, 1022));  // keys not a multiple of 4
  // 8 rows per block at 128 keys: 4 batches pass the first check but not the block's.
  EXPECT_FALSE(megatron_fused_causal_softmax_available(4, 128));
  EXPECT_TRUE(megatron_fused_causal_softmax_available(8, 128));
}

std::int64_t count_ops(const Trace& trace, const std::string& name, const std::string& phase) {
  return std::count_if(trace.ops.begin(), trace.ops.end(),
                       [&](const Op& op) { return op.name == name && op_phase(op) == phase; });
}

struct SoftmaxOps {
  std::int64_t forward_softmax = 0, forward_masked_fill = 0, backward_masked_fill = 0,
               backward_softmax = 0, layers = 0;
  DType softmax_dtype = DType::kUnknown;  // the forward softmax's output
};

DType model_dtype() {
  return test_support::tiny_gpt().dtype;
}

SoftmaxOps softmax_ops(int micro_batch) {
  TransformerConfig model = test_support::tiny_gpt();  // 8 heads, sequence 128
  model.attention = AttentionKernel::kUnfused;
  model.micro_batch = micro_batch;
  model.global_batch = micro_batch;  // one micro-batch
  const ParallelConfig parallel{.tp = 4, .pp = 1, .dp = 1};
  const Trace trace = generate_llm_rank(model, parallel, 0);
  const auto softmax = std::find_if(trace.ops.begin(), trace.ops.end(),
                                    [](const Op& op) { return op.name == "aten::_softmax"; });
  return {count_ops(trace, "aten::_softmax", "forward"),
          count_ops(trace, "aten::masked_fill_", "forward"),
          count_ops(trace, "aten::masked_fill_", "backward"),
          count_ops(trace, "aten::_softmax_backward_data", "backward"),
          model.layers,
          softmax == trace.ops.end() ? DType::kUnknown : softmax->outputs.at(0).dtype};
}

TEST(MegatronFusedSoftmax, GeneratorEmitsTheFallbackOnlyWhereTheKernelIsUnavailable) {
  // TP 4 of 8 heads: 2 heads per rank. Micro-batch 2: 4 attention batches of 128 keys, which
  // the 8-row blocks of the fused kernel do not divide: fallback. Micro-batch 4: fused.
  const SoftmaxOps fallback = softmax_ops(2);
  const SoftmaxOps fused = softmax_ops(4);
  EXPECT_EQ(fused.forward_softmax, fused.layers);
  EXPECT_EQ(fused.forward_masked_fill, 0);
  EXPECT_EQ(fused.backward_masked_fill, 0);
  EXPECT_EQ(fused.backward_softmax, fused.layers);
  EXPECT_EQ(fallback.forward_softmax, fallback.layers);
  EXPECT_EQ(fallback.forward_masked_fill, fallback.layers);
  EXPECT_EQ(fallback.backward_masked_fill, fallback.layers);
  EXPECT_EQ(fallback.backward_softmax, fallback.layers);
  // Query-key layer scaling puts the fallback's softmax in fp32; the fused kernel stays in the
  // activations' dtype.
  EXPECT_EQ(fallback.softmax_dtype, DType::kFloat32);
  EXPECT_EQ(fused.softmax_dtype, model_dtype());
}

}  // namespace
}  // namespace perfsim::generators::llm
