// Token dropping with a capacity factor and padding to capacity (README "Token dropping"):
// exact per-rank op counts of Megatron-Core's apply_router_token_dropping, the alltoall
// dispatcher's host path with and without padding, permute's drop_and_pad path, and the rows
// the experts and the all-to-alls carry, on the 2-layer tiny MoE (4 experts, top 2, sequence
// 32: 32 tokens per rank and micro-batch, 64 routed rows, a mean of 16 per expert).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "generators/llm/llm_local_shapes.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "perfsim/error.hpp"
#include "perfsim/trace.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

struct Counts : test_support::PhaseOpCounts {
  int host_syncs = 0;     // ops whose runtime call blocks the host
  int to_host = 0;        // copies whose output is a host tensor
  int count_gathers = 0;  // all-gathers of int64 token counts
  double expert_flops = 0;
  Bytes token_all_to_all_bytes = 0;  // bytes of the first all-to-all of hidden-wide rows
  // Trace positions (forward, first MoE layer) of the host wait and of the first permute op.
  std::size_t first_wait = SIZE_MAX, first_permute = SIZE_MAX;
};

Counts count(const TransformerConfig& model, const ParallelConfig& parallel) {
  Counts c;
  const Trace trace = generate_llm_rank(model, parallel, 0);
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const Op& op = trace.ops[i];
    if (op.is_annotation)
      continue;
    c.count(op, op_phase(op));
    if (op.name == "aten::copy_" && !op.outputs.empty() && op.outputs.front().device == "cpu")
      ++c.to_host;
    if (op.name == "te::grouped_gemm")
      c.expert_flops += std::get<double>(op.find_attribute("flops")->value);
    if (op.comm && op.comm->kind == CollectiveKind::kAllGather && op.comm->dtype == DType::kInt64)
      ++c.count_gathers;
    if (op.comm && op.comm->kind == CollectiveKind::kAllToAllv && c.token_all_to_all_bytes == 0 &&
        op.inputs.front().shape.back() == model.hidden)
      c.token_all_to_all_bytes = op.comm->bytes_in;
    for (const RuntimeCall& call : op.runtime_calls)
      c.host_syncs += is_blocking_runtime_call(call.name) ? 1 : 0;
    if (op.name == kDispatcherSyncOpName && c.first_wait == SIZE_MAX)
      c.first_wait = i;
    if ((op.name == "te::make_row_id_map" || op.name == "aten::argsort") &&
        c.first_permute == SIZE_MAX)
      c.first_permute = i;
  }
  return c;
}

TransformerConfig with_capacity(double factor) {
  TransformerConfig model = test_support::tiny_moe();
  model.moe.capacity_factor = factor;
  return model;
}

ParallelConfig ep2(bool pad, bool fused = true) {
  ParallelConfig parallel{.dp = 4, .ep = 2};
  parallel.moe_permute_fusion = fused;
  parallel.moe_pad_to_capacity = pad;
  return parallel;
}

TEST(LlmMoeTokenDrop, CapacityIsMegatronsGetCapacity) {
  // ceil(32 tokens x top 2 / 4 experts x factor) rows per expert, times 4 experts.
  EXPECT_EQ(padded_expert_rows(32, with_capacity(1.0).moe), 4 * 16);
  EXPECT_EQ(padded_expert_rows(32, with_capacity(1.5).moe), 4 * 24);
  EXPECT_EQ(padded_expert_rows(32, with_capacity(1.1).moe), 4 * 18);  // 17.6 rounds up
  ParallelConfig parallel = ep2(false);
  parallel.moe_imbalance = 2.0;
  EXPECT_DOUBLE_EQ(expert_load(with_capacity(1.5).moe, parallel), 1.5);
  EXPECT_DOUBLE_EQ(expert_load(with_capacity(0).moe, parallel), 2.0);
}

TEST(LlmMoeTokenDrop, DroppingAddsTheCapacityMaskAndKeepsTheHostWait) {
  const Counts dropless = count(with_capacity(0), ep2(false));
  const Counts dropping = count(with_capacity(1.5), ep2(false));
  // Per MoE layer (2): topk over each expert's tokens, zeros_like, scatter, the bool cast, the
  // logical_and with the routing map, the probabilities times the map; backward: that mul's.
  EXPECT_EQ(dropping.fwd("aten::topk") - dropless.fwd("aten::topk"), 2);
  EXPECT_EQ(dropping.fwd("aten::zeros_like") - dropless.fwd("aten::zeros_like"), 2);
  EXPECT_EQ(dropping.fwd("aten::scatter") - dropless.fwd("aten::scatter"), 2);
  EXPECT_EQ(dropping.fwd("aten::_to_copy") - dropless.fwd("aten::_to_copy"), 2);
  EXPECT_EQ(dropping.fwd("aten::logical_and"), 2);
  EXPECT_EQ(dropping.fwd("aten::mul") - dropless.fwd("aten::mul"), 2);
  EXPECT_EQ(dropping.bwd("aten::mul") - dropless.bwd("aten::mul"), 2);
  // The counts still go to the host (one more: num_out_tokens) and the host still waits,
  // now before the permute, which the count sizes.
  EXPECT_EQ(dropping.to_host - dropless.to_host, 2);
  EXPECT_EQ(dropping.host_syncs, dropless.host_syncs);
  EXPECT_EQ(dropping.count_gathers, dropless.count_gathers);
  EXPECT_LT(dropping.first_wait, dropping.first_permute);
  EXPECT_GT(dropless.first_wait, dropless.first_permute);
  // Balanced routing drops nothing: the same expert work.
  EXPECT_DOUBLE_EQ(dropping.expert_flops, dropless.expert_flops);
}

TEST(LlmMoeTokenDrop, TheFactorCapsTheImbalance) {
  ParallelConfig parallel = ep2(false);
  parallel.moe_imbalance = 2.0;
  const Counts uncapped = count(with_capacity(0), parallel);
  const Counts capped = count(with_capacity(1.5), parallel);
  EXPECT_DOUBLE_EQ(capped.expert_flops, uncapped.expert_flops * 1.5 / 2.0);
}

TEST(LlmMoeTokenDrop, RoomForEveryTokenNeedsNoTopK) {
  // Factor 3: capacity 48 > 32 tokens: torch.ones_like instead of topk, zeros and scatter.
  const Counts dropless = count(with_capacity(0), ep2(false));
  const Counts roomy = count(with_capacity(3.0), ep2(false));
  EXPECT_EQ(roomy.fwd("aten::ones_like"), 2);
  EXPECT_EQ(roomy.fwd("aten::topk"), dropless.fwd("aten::topk"));
  EXPECT_EQ(roomy.fwd("aten::logical_and"), 2);
}

TEST(LlmMoeTokenDrop, PaddedDispatcherKnowsItsSplitsAndNeverWaits) {
  const Counts dropless = count(with_capacity(0), ep2(false));
  const Counts padded = count(with_capacity(1.5), ep2(true));
  // Per layer only routing_map.sum(dim=0) of the preprocess: no count all-gather, nothing to
  // the host, no host wait.
  EXPECT_EQ(padded.count_gathers, 0);
  EXPECT_EQ(padded.to_host, 0);
  EXPECT_EQ(padded.host_syncs, 0);
  EXPECT_EQ(padded.first_wait, SIZE_MAX);
  EXPECT_GT(dropless.host_syncs, 0);
  // Dropless sums 5 per layer (the counts, the input splits, per rank, per ETP rank, per local
  // expert); padded only the first.
  EXPECT_EQ(dropless.fwd("aten::sum") - padded.fwd("aten::sum"), 2 * 4);
  // The capacity mask is the map: no logical_and.
  EXPECT_EQ(padded.fwd("aten::logical_and"), 0);
  // Every expert computes its capacity, 24 rows against a mean of 16: 1.5x the work, and the
  // all-to-all carries 4 x 24 rows of 64 bf16 values.
  EXPECT_DOUBLE_EQ(padded.expert_flops, dropless.expert_flops * 1.5);
  EXPECT_EQ(padded.token_all_to_all_bytes, Bytes{4 * 24 * 64 * 2});
  EXPECT_EQ(dropless.token_all_to_all_bytes, Bytes{64 * 64 * 2});
}

TEST(LlmMoeTokenDrop, PaddedPermuteWithoutFusionSortsInsteadOfMaskedSelect) {
  const Counts dropless = count(with_capacity(0), ep2(false, false));
  const Counts padded = count(with_capacity(1.0), ep2(true, false));
  // Unfused dropless: masked_select twice per layer, each a host wait, and the dispatcher's.
  EXPECT_EQ(dropless.fwd("aten::masked_select"), 2 * 2);
  EXPECT_EQ(padded.fwd("aten::masked_select"), 0);
  EXPECT_EQ(padded.fwd("aten::argsort"), 2);
  EXPECT_EQ(padded.fwd("aten::index_select") - dropless.fwd("aten::index_select"), 2);
  EXPECT_EQ(padded.host_syncs, 0);
  EXPECT_LT(padded.first_permute, SIZE_MAX);
}

TEST(LlmMoeTokenDrop, PaddingNeedsACapacityFactorAndTheAlltoallDispatcher) {
  EXPECT_THROW(generate_llm_rank(with_capacity(0), ep2(true), 0), InputError);
  ParallelConfig flex = ep2(true);
  flex.moe_token_dispatcher = MoeTokenDispatcher::kFlex;
  EXPECT_THROW(generate_llm_rank(with_capacity(1.0), flex, 0), InputError);
}

}  // namespace
}  // namespace perfsim::generators::llm
