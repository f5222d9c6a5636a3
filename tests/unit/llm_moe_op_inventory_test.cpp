// The MoE layer's op inventory (README "The MoE layer's op inventory from Megatron-Core's
// source"): exact op counts per MoE layer forward and backward on the 2-layer tiny MoE (4
// experts, top 2, one micro-batch per rank) under each switch Megatron-Core has for them
// (moe_router_fusion, moe_permute_fusion, moe_router_force_load_balancing, the model's
// router_load_balancing), and a dense model's ops untouched by them.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "perfsim/trace.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

constexpr int kLayers = 2;  // tiny_moe: both MoE layers, one micro-batch on rank 0

struct PhaseCounts : test_support::PhaseOpCounts {
  int forward_ops = 0, backward_ops = 0;
  int forward_host_syncs = 0;
  int to_host = 0;            // copies whose output is a host tensor
  int count_all_reduces = 0;  // all-reduces of the 4 experts' fp32 token counts
  int probability_all_to_all = 0;
};

PhaseCounts count(const TransformerConfig& model, const ParallelConfig& parallel) {
  PhaseCounts counts;
  for (const Op& op : generate_llm_rank(model, parallel, 0).ops) {
    if (op.is_annotation)
      continue;
    const std::string phase = op_phase(op);
    if (phase == "forward") {
      ++counts.forward[op.name];
      ++counts.forward_ops;
      for (const RuntimeCall& call : op.runtime_calls)
        counts.forward_host_syncs += is_blocking_runtime_call(call.name) ? 1 : 0;
    } else if (phase == "backward") {
      ++counts.backward[op.name];
      ++counts.backward_ops;
    }
    if (op.name == "aten::copy_" && !op.outputs.empty() && op.outputs.front().device == "cpu")
      ++counts.to_host;
    if (op.comm && op.comm->kind == CollectiveKind::kAllReduce && op.comm->bytes_in == 4 * 4)
      ++counts.count_all_reduces;
    if (op.comm && op.comm->kind == CollectiveKind::kAllToAllv && op.comm->dtype == DType::kFloat32)
      ++counts.probability_all_to_all;
  }
  return counts;
}

ParallelConfig switches(ParallelConfig parallel, bool router_fusion, bool permute_fusion,
                        bool force_load_balancing = false) {
  parallel.moe_router_fusion = router_fusion;
  parallel.moe_permute_fusion = permute_fusion;
  parallel.moe_router_force_load_balancing = force_load_balancing;
  return parallel;
}

TEST(LlmMoeOpInventory, RouterFusedAndUnfused) {
  const ParallelConfig ep2{.dp = 4, .ep = 2};
  const PhaseCounts fused = count(test_support::tiny_moe(), switches(ep2, true, true));
  // TE's fused router: one kernel each way for the top-k, the aux loss's scores and the loss.
  EXPECT_EQ(fused.fwd("te::fused_topk_with_score_function"), kLayers);
  EXPECT_EQ(fused.fwd("te::fused_compute_score_for_moe_aux_loss"), kLayers);
  EXPECT_EQ(fused.fwd("te::fused_moe_aux_loss"), kLayers);
  EXPECT_EQ(fused.bwd("te::fused_topk_with_score_function_backward"), kLayers);
  EXPECT_EQ(fused.bwd("te::fused_moe_aux_loss_backward"), kLayers);
  EXPECT_EQ(fused.bwd("te::fused_compute_score_for_moe_aux_loss_backward"), kLayers);
  EXPECT_EQ(fused.fwd("aten::topk"), 0);
  // The tracker (div, add_) and MoEAuxLossAutoScaler's backward (ones_like, mul) either way.
  EXPECT_EQ(fused.fwd("aten::div"), kLayers);
  EXPECT_EQ(fused.bwd("aten::ones_like"), kLayers);

  const PhaseCounts unfused = count(test_support::tiny_moe(), switches(ep2, false, true));
  EXPECT_EQ(unfused.fwd("te::fused_topk_with_score_function"), 0);
  EXPECT_EQ(unfused.fwd("aten::topk"), 2 * kLayers);     // routing and aux-loss scores
  EXPECT_EQ(unfused.fwd("aten::scatter"), 3 * kLayers);  // probs, map; aux map
  EXPECT_EQ(unfused.bwd("aten::scatter"), kLayers);      // topk's backward
  EXPECT_EQ(unfused.bwd("aten::gather"), kLayers);       // scatter's backward
  EXPECT_EQ(unfused.fwd("aten::zeros_like"), 3 * kLayers);
  // Forward per layer: router 9 ops against 1, aux loss 13 against 5; backward: top-k 5
  // against 1, aux loss 5 against 4.
  EXPECT_EQ(unfused.forward_ops - fused.forward_ops, kLayers * ((9 - 1) + (13 - 5)));
  EXPECT_EQ(unfused.backward_ops - fused.backward_ops, kLayers * ((5 - 1) + (5 - 4)));
}

TEST(LlmMoeOpInventory, NoAuxLossDropsItsOpsAndAllReduce) {
  TransformerConfig none = test_support::tiny_moe();
  none.moe.aux_loss = false;
  const ParallelConfig tp2 =
      switches({.tp = 2, .dp = 4, .ep = 2, .sequence_parallel = true}, true, true);
  const PhaseCounts with_loss = count(test_support::tiny_moe(), tp2);
  const PhaseCounts without = count(none, tp2);
  EXPECT_EQ(with_loss.count_all_reduces, kLayers);  // the token counts over TP x CP
  EXPECT_EQ(without.count_all_reduces, 0);
  EXPECT_EQ(without.fwd("te::fused_moe_aux_loss"), 0);
  // Forward: scores, counts' sum, all-reduce, loss, div, add_; backward: ones_like, mul, two
  // fused backwards, the logits' gradients' sum.
  EXPECT_EQ(with_loss.forward_ops - without.forward_ops, kLayers * 6);
  EXPECT_EQ(with_loss.backward_ops - without.backward_ops, kLayers * 5);
}

TEST(LlmMoeOpInventory, ForceLoadBalancingAddsRandomLogits) {
  const ParallelConfig ep2{.dp = 4, .ep = 2};
  const PhaseCounts off = count(test_support::tiny_moe(), switches(ep2, true, true, false));
  const PhaseCounts on = count(test_support::tiny_moe(), switches(ep2, true, true, true));
  EXPECT_EQ(on.fwd("aten::normal_"), kLayers);
  EXPECT_EQ(on.fwd("aten::clone") - off.fwd("aten::clone"), kLayers);
  EXPECT_EQ(on.forward_ops - off.forward_ops, 2 * kLayers);
  EXPECT_EQ(on.backward_ops, off.backward_ops);  // RandomSTE.backward: Python, no kernel
}

TEST(LlmMoeOpInventory, PermuteFusedAndUnfused) {
  const ParallelConfig ep2{.dp = 4, .ep = 2};  // 2 local experts: both sorts run
  const PhaseCounts fused = count(test_support::tiny_moe(), switches(ep2, true, true));
  EXPECT_EQ(fused.fwd("te::make_row_id_map"), 3 * kLayers);
  EXPECT_EQ(fused.fwd("te::moe_permute"), kLayers);
  EXPECT_EQ(fused.fwd("te::make_chunk_sort_map"), 2 * kLayers);
  EXPECT_EQ(fused.fwd("te::moe_sort_chunks_by_index"), 2 * kLayers);
  EXPECT_EQ(fused.bwd("te::moe_sort_chunks_by_index"), 2 * kLayers);
  EXPECT_EQ(fused.fwd("te::moe_unpermute"), kLayers);
  EXPECT_EQ(fused.bwd("te::moe_unpermute_backward"), kLayers);
  EXPECT_EQ(fused.bwd("te::moe_unpermute"), kLayers);  // the permute's backward
  EXPECT_EQ(fused.fwd("aten::masked_select"), 0);
  EXPECT_EQ(fused.forward_host_syncs, kLayers);  // the dispatcher's wait for its counts
  EXPECT_EQ(fused.to_host, 4 * kLayers);
  // The probabilities to the experts and their gradients back: one all-to-all each way.
  EXPECT_EQ(fused.probability_all_to_all, 2 * kLayers);

  const PhaseCounts unfused = count(test_support::tiny_moe(), switches(ep2, true, false));
  EXPECT_EQ(unfused.fwd("te::make_row_id_map") + unfused.fwd("te::moe_sort_chunks_by_index"), 0);
  EXPECT_EQ(unfused.fwd("aten::masked_select"), 2 * kLayers);  // token indices, probabilities
  EXPECT_EQ(unfused.forward_host_syncs, 3 * kLayers);          // and the dispatcher's wait
  EXPECT_EQ(unfused.to_host, 5 * kLayers);  // + the per-local-expert counts cat splits by
  EXPECT_EQ(unfused.fwd("aten::cat") - fused.fwd("aten::cat"), 3 * kLayers);
  EXPECT_EQ(unfused.bwd("aten::cat") - fused.bwd("aten::cat"), 3 * kLayers);
  EXPECT_EQ(unfused.fwd("aten::scatter_add_"), kLayers);
  EXPECT_EQ(unfused.bwd("aten::index_add_"), kLayers);
  EXPECT_EQ(unfused.bwd("aten::masked_scatter"), kLayers);
  EXPECT_EQ(unfused.probability_all_to_all, 2 * kLayers);
  // Forward per layer: permute 6 against 4, sorts 3 against 4, unpermute 2 against 1, one
  // more copy; backward: permute's 5 against 1, sorts' 3 against 2, unpermute's 1 and 1.
  EXPECT_EQ(unfused.forward_ops - fused.forward_ops, kLayers * ((6 - 4) + (3 - 4) + (2 - 1) + 1));
  EXPECT_EQ(unfused.backward_ops - fused.backward_ops, kLayers * ((5 - 1) + (3 - 2)));

  // One local expert (EP 4): no sorts, no per-local-expert copy.
  const ParallelConfig ep4{.dp = 4, .ep = 4};
  const PhaseCounts one_local = count(test_support::tiny_moe(), switches(ep4, true, false));
  EXPECT_EQ(one_local.to_host, 4 * kLayers);
  EXPECT_EQ(one_local.fwd("aten::cat"), fused.fwd("aten::cat"));
}

TEST(LlmMoeOpInventory, DenseLayersIgnoreTheSwitches) {
  const ParallelConfig parallel{.tp = 2, .dp = 2, .sequence_parallel = true};
  const Trace off = generate_llm_rank(test_support::tiny_llama(), parallel, 0);
  const Trace on =
      generate_llm_rank(test_support::tiny_llama(), switches(parallel, true, true, true), 0);
  ASSERT_EQ(off.ops.size(), on.ops.size());
  for (std::size_t i = 0; i < off.ops.size(); ++i) {
    EXPECT_EQ(off.ops[i].name, on.ops[i].name) << i;
    EXPECT_EQ(off.ops[i].inputs.size(), on.ops[i].inputs.size()) << i;
  }
}

}  // namespace
}  // namespace perfsim::generators::llm
