// DeepSeek-V3's router as Megatron-Core runs it (README "DeepSeek-V3's router as Megatron-Core
// runs it"): exact op counts per MoE layer forward and backward on the 2-layer tiny MoE (4
// experts, top 2, one micro-batch per rank, unfused router) for each switch: the sigmoid score
// function, the expert bias, group-limited routing, the top-k scaling factor, the
// sequence-level aux loss and moe_router_dtype fp32; the model-file fields; dense models
// untouched by the router dtype.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "perfsim/error.hpp"
#include "perfsim/trace.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

constexpr int kLayers = 2;  // tiny_moe: both MoE layers, one micro-batch on rank 0

struct PhaseCounts : test_support::PhaseOpCounts {
  int forward_ops = 0, backward_ops = 0;
  int tf32_gemms = 0;            // backward GEMMs whose operands are fp32 run as TF32
  std::int64_t count_bytes = 0;  // bytes of the router's token-count all-reduces
  int count_all_reduces = 0;
  DType logits_dtype = DType::kUnknown;  // the router GEMM's output ([tokens, 4 experts])
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
      if (op.name == "aten::mm" && op.outputs.front().shape.back() == model.moe.num_experts &&
          op.outputs.front().shape.size() == 2 && counts.logits_dtype == DType::kUnknown)
        counts.logits_dtype = op.outputs.front().dtype;
    } else if (phase == "backward") {
      ++counts.backward[op.name];
      ++counts.backward_ops;
      if (op.name == "aten::mm" && op.inputs.front().dtype == DType::kTFloat32)
        ++counts.tf32_gemms;
    }
    if (phase == "forward" && op.comm && op.comm->kind == CollectiveKind::kAllReduce &&
        op.comm->bytes_in <= 64) {
      ++counts.count_all_reduces;
      counts.count_bytes += op.comm->bytes_in;
    }
  }
  return counts;
}

TransformerConfig sigmoid_moe() {
  TransformerConfig model = test_support::tiny_moe();
  model.moe.sigmoid_scores = true;
  return model;
}

const ParallelConfig kEp2{.dp = 4, .ep = 2};

TEST(LlmMoeDeepSeekRouter, SigmoidScoresReplaceSoftmax) {
  const PhaseCounts softmax = count(test_support::tiny_moe(), kEp2);
  const PhaseCounts sigmoid = count(sigmoid_moe(), kEp2);
  // Routing: _to_copy, sigmoid, _to_copy, topk, and the k scores normalized (sum, add, div)
  // against topk, softmax, _to_copy; aux-loss scores: _to_copy, sigmoid, sum, add, div against
  // softmax.
  EXPECT_EQ(sigmoid.fwd("aten::sigmoid"), 2 * kLayers);
  EXPECT_EQ(sigmoid.fwd("aten::softmax"), 0);
  EXPECT_EQ(softmax.fwd("aten::softmax"), 2 * kLayers);
  EXPECT_EQ(sigmoid.forward_ops - softmax.forward_ops, kLayers * ((7 - 3) + (5 - 1)));
  // Backward: the normalization's (div; div, div, neg, mul, sum; add: 7) and the sigmoid's
  // with its two casts, for the routing (13 against gather, _to_copy, softmax's, zeros,
  // scatter) and for the aux loss (13 against ones_like, three muls and the softmax's).
  EXPECT_EQ(sigmoid.bwd("aten::sigmoid_backward"), 2 * kLayers);
  EXPECT_EQ(sigmoid.bwd("aten::_softmax_backward_data"), 0);
  EXPECT_EQ(sigmoid.bwd("aten::neg"), 2 * kLayers);
  EXPECT_EQ(sigmoid.backward_ops - softmax.backward_ops, kLayers * ((13 - 5) + (13 - 5)));
}

TEST(LlmMoeDeepSeekRouter, ExpertBiasChoosesOnBiasedScores) {
  TransformerConfig biased = sigmoid_moe();
  biased.moe.expert_bias = true;
  const PhaseCounts plain = count(sigmoid_moe(), kEp2);
  const PhaseCounts with_bias = count(biased, kEp2);
  // scores + expert_bias, the gather of the chosen unbiased scores, and _apply_expert_bias's
  // compiled kernel adding the map's column sums into local_tokens_per_expert.
  EXPECT_EQ(with_bias.fwd("aten::gather"), kLayers);
  EXPECT_EQ(with_bias.fwd("megatron::apply_expert_bias"), kLayers);
  EXPECT_EQ(plain.fwd("megatron::apply_expert_bias"), 0);
  EXPECT_EQ(with_bias.forward_ops - plain.forward_ops, 3 * kLayers);
  // The gather's backward (zeros, scatter_add_) in place of top-k's (zeros, scatter).
  EXPECT_EQ(with_bias.bwd("aten::scatter_add_"), kLayers);
  EXPECT_EQ(with_bias.bwd("aten::scatter") + kLayers, plain.bwd("aten::scatter"));
  EXPECT_EQ(with_bias.backward_ops, plain.backward_ops);
}

TEST(LlmMoeDeepSeekRouter, GroupLimitedTopK) {
  TransformerConfig grouped = sigmoid_moe();
  grouped.moe.expert_bias = true;
  grouped.moe.router_num_groups = 2;
  grouped.moe.router_group_topk = 1;
  TransformerConfig biased = sigmoid_moe();
  biased.moe.expert_bias = true;
  const PhaseCounts plain = count(biased, kEp2);
  const PhaseCounts groups = count(grouped, kEp2);
  // group_limited_topk: topk within the groups, their sum, topk of the groups, zeros_like,
  // scatter_, the expanded mask's reshape, bool, bitwise_not, masked_fill, then the top-k.
  EXPECT_EQ(groups.fwd("aten::topk"), 4 * kLayers);  // 3 routing, 1 aux-loss scores
  EXPECT_EQ(groups.fwd("aten::masked_fill"), kLayers);
  EXPECT_EQ(groups.fwd("aten::bitwise_not"), kLayers);
  EXPECT_EQ(groups.forward_ops - plain.forward_ops, 9 * kLayers);
  // With the bias the gradient flows through the gather, not the masked scores.
  EXPECT_EQ(groups.backward_ops, plain.backward_ops);
  // Without it top-k's backward goes on through masked_fill's.
  TransformerConfig unbiased = sigmoid_moe();
  unbiased.moe.router_num_groups = 2;
  unbiased.moe.router_group_topk = 1;
  const PhaseCounts groups_unbiased = count(unbiased, kEp2);
  EXPECT_EQ(groups_unbiased.bwd("aten::masked_fill"), kLayers);
  EXPECT_EQ(groups_unbiased.backward_ops - count(sigmoid_moe(), kEp2).backward_ops, kLayers);
}

// finalize_model_grads' _update_router_expert_bias once per iteration: the stage's routers'
// counts and biases stacked, the counts all-reduced over TP x DP x CP, five element-wise ops
// and the sum, then per router a zero_ and a copy_.
struct BiasUpdate {
  int stacks = 0, signs = 0, zeros = 0, copies = 0, all_reduces = 0;
  std::int64_t bytes = 0;
  int group_size = 0;
  std::string group;
};

BiasUpdate bias_update(const TransformerConfig& model, const ParallelConfig& parallel) {
  BiasUpdate update;
  for (const Op& op : generate_llm_rank(model, parallel, 0).ops) {
    if (op_phase(op) != "grad-sync")
      continue;
    update.stacks += op.name == "aten::stack" ? 1 : 0;
    update.signs += op.name == "aten::sign" ? 1 : 0;
    update.zeros += op.name == "aten::zero_" ? 1 : 0;
    update.copies += op.name == "aten::copy_" ? 1 : 0;
    // The gradients' own reduction in this phase is far larger than [routers, experts].
    if (op.comm && op.comm->kind == CollectiveKind::kAllReduce && op.comm->bytes_in <= 64) {
      ++update.all_reduces;
      update.bytes = op.comm->bytes_in;
      update.group_size = op.comm->group_size;
      update.group = op.comm->process_group;
    }
  }
  return update;
}

TEST(LlmMoeDeepSeekRouter, ExpertBiasUpdatedOncePerIteration) {
  TransformerConfig biased = sigmoid_moe();
  biased.moe.expert_bias = true;
  const ParallelConfig tp2{.tp = 2, .dp = 2, .ep = 2, .sequence_parallel = true};
  const BiasUpdate update = bias_update(biased, tp2);
  EXPECT_EQ(update.stacks, 2);
  EXPECT_EQ(update.signs, 1);
  EXPECT_EQ(update.zeros, kLayers);
  EXPECT_EQ(update.copies, kLayers);
  EXPECT_EQ(update.all_reduces, 1);
  EXPECT_EQ(update.bytes, kLayers * 4 * 4);  // [2 routers, 4 experts] fp32
  EXPECT_EQ(update.group_size, 4);           // TP 2 x DP 2
  EXPECT_EQ(update.group.rfind("tpdp/", 0), 0u) << update.group;
  // TP 1: the DP x CP group.
  const BiasUpdate tp1 = bias_update(biased, kEp2);
  EXPECT_EQ(tp1.group_size, 4);
  EXPECT_EQ(tp1.group.rfind("dp/", 0), 0u) << tp1.group;
  // Without the bias nothing runs.
  const BiasUpdate none = bias_update(sigmoid_moe(), tp2);
  EXPECT_EQ(none.stacks + none.signs + none.zeros + none.all_reduces, 0);
}

TEST(LlmMoeDeepSeekRouter, TopKScalingFactor) {
  TransformerConfig scaled = sigmoid_moe();
  scaled.moe.topk_scaling_factor = 2.5;
  const PhaseCounts plain = count(sigmoid_moe(), kEp2);
  const PhaseCounts with_scale = count(scaled, kEp2);
  EXPECT_EQ(with_scale.forward_ops - plain.forward_ops, kLayers);    // probs * factor
  EXPECT_EQ(with_scale.backward_ops - plain.backward_ops, kLayers);  // its product's backward
  EXPECT_EQ(with_scale.fwd("aten::mul") - plain.fwd("aten::mul"), kLayers);
}

TEST(LlmMoeDeepSeekRouter, SequenceAuxLossCountsPerSequence) {
  TransformerConfig model = test_support::tiny_moe();
  model.micro_batch = 2;  // two sequences per micro-batch: 2 x 4 counts
  TransformerConfig sequence = model;
  sequence.moe.sequence_aux_loss = true;
  const ParallelConfig tp2{.tp = 2, .dp = 2, .ep = 2, .sequence_parallel = true};
  const PhaseCounts aux = count(model, tp2);
  const PhaseCounts seq = count(sequence, tp2);
  // The counts all-reduced over TP x CP: 4 fp32 per layer for aux_loss; 2 sequences x 4
  // experts int64 (bool.sum) for seq_aux_loss.
  EXPECT_EQ(aux.count_all_reduces, kLayers);
  EXPECT_EQ(aux.count_bytes, kLayers * 4 * 4);
  EXPECT_EQ(seq.count_all_reduces, kLayers);
  EXPECT_EQ(seq.count_bytes, kLayers * 2 * 4 * 8);
  // The loss over the batch, forward and backward.
  EXPECT_EQ(seq.forward_ops - aux.forward_ops, kLayers);
  EXPECT_EQ(seq.backward_ops - aux.backward_ops, kLayers);
  EXPECT_EQ(seq.fwd("aten::div") - aux.fwd("aten::div"), kLayers);
}

TEST(LlmMoeDeepSeekRouter, Fp32RouterDtype) {
  ParallelConfig fp32 = kEp2;
  fp32.moe_router_fp32 = true;
  const PhaseCounts bf16 = count(test_support::tiny_moe(), kEp2);
  const PhaseCounts router32 = count(test_support::tiny_moe(), fp32);
  EXPECT_EQ(bf16.logits_dtype, DType::kBFloat16);
  EXPECT_EQ(router32.logits_dtype, DType::kFloat32);
  // Forward: softmax's type_as is no cast on fp32 logits. Backward: the same, and the router
  // GEMM's weight and input cast to fp32 before two TF32 GEMMs, both gradients cast back.
  EXPECT_EQ(bf16.forward_ops - router32.forward_ops, kLayers);
  EXPECT_EQ(router32.backward_ops - bf16.backward_ops, kLayers * (4 - 1));
  EXPECT_EQ(router32.bwd("aten::copy_") - bf16.bwd("aten::copy_"), 4 * kLayers);
  EXPECT_EQ(router32.tf32_gemms, 2 * kLayers);
  EXPECT_EQ(bf16.tf32_gemms, 0);
  // Sigmoid scores on fp32 logits: neither .float() nor type_as casts (2 routing, 1 aux
  // forward; 2 routing, 1 aux backward).
  const PhaseCounts sigmoid16 = count(sigmoid_moe(), kEp2);
  const PhaseCounts sigmoid32 = count(sigmoid_moe(), fp32);
  EXPECT_EQ(sigmoid16.fwd("aten::_to_copy") - sigmoid32.fwd("aten::_to_copy"), 3 * kLayers);
  EXPECT_EQ(sigmoid16.bwd("aten::_to_copy") - sigmoid32.bwd("aten::_to_copy"), 3 * kLayers);
}

TEST(LlmMoeDeepSeekRouter, DenseModelsIgnoreTheRouterDtype) {
  ParallelConfig parallel{.tp = 2, .dp = 2, .sequence_parallel = true};
  const Trace off = generate_llm_rank(test_support::tiny_llama(), parallel, 0);
  parallel.moe_router_fp32 = true;
  const Trace on = generate_llm_rank(test_support::tiny_llama(), parallel, 0);
  ASSERT_EQ(off.ops.size(), on.ops.size());
  for (std::size_t i = 0; i < off.ops.size(); ++i) {
    EXPECT_EQ(off.ops[i].name, on.ops[i].name) << i;
    ASSERT_EQ(off.ops[i].inputs.size(), on.ops[i].inputs.size()) << i;
    for (std::size_t j = 0; j < off.ops[i].inputs.size(); ++j)
      EXPECT_EQ(off.ops[i].inputs[j].dtype, on.ops[i].inputs[j].dtype) << i;
  }
}

constexpr const char* kModelHead = R"({"schema": "perfsim-llm-model/1", "name": "m",
  "layers": 2, "hidden": 64, "heads": 4, "ffn_hidden": 256, "vocab": 128, "seq_len": 32,
  "num_experts": 8, "top_k": 4, "moe_ffn_hidden": 32)";

TEST(LlmMoeDeepSeekRouter, ModelFileFields) {
  const TransformerConfig defaults = parse_transformer_config(std::string(kModelHead) + "}", "m");
  EXPECT_FALSE(defaults.moe.sigmoid_scores);
  EXPECT_FALSE(defaults.moe.expert_bias);
  EXPECT_FALSE(defaults.moe.sequence_aux_loss);
  EXPECT_TRUE(defaults.moe.aux_loss);
  EXPECT_EQ(defaults.moe.router_num_groups, 0);
  EXPECT_EQ(defaults.moe.topk_scaling_factor, 0);
  const TransformerConfig v3 = parse_transformer_config(
      std::string(kModelHead) +
          R"(, "router_score_function": "sigmoid", "router_expert_bias": true,
          "router_num_groups": 4, "router_group_topk": 2, "router_topk_scaling_factor": 2.5,
          "router_load_balancing": "seq_aux_loss"})",
      "m");
  EXPECT_TRUE(v3.moe.sigmoid_scores);
  EXPECT_TRUE(v3.moe.expert_bias);
  EXPECT_TRUE(v3.moe.aux_loss);
  EXPECT_TRUE(v3.moe.sequence_aux_loss);
  EXPECT_EQ(v3.moe.router_num_groups, 4);
  EXPECT_EQ(v3.moe.router_group_topk, 2);
  EXPECT_DOUBLE_EQ(v3.moe.topk_scaling_factor, 2.5);
  // Groups go in pairs and must divide the experts and the top-k.
  EXPECT_THROW(
      parse_transformer_config(std::string(kModelHead) + R"(, "router_num_groups": 4})", "m"),
      InputError);
  EXPECT_THROW(
      parse_transformer_config(
          std::string(kModelHead) + R"(, "router_num_groups": 3, "router_group_topk": 1})", "m"),
      InputError);
  EXPECT_THROW(
      parse_transformer_config(
          std::string(kModelHead) + R"(, "router_num_groups": 4, "router_group_topk": 3})", "m"),
      InputError);
  EXPECT_THROW(parse_transformer_config(
                   std::string(kModelHead) + R"(, "router_score_function": "sqrtsoftplus"})", "m"),
               InputError);
}

}  // namespace
}  // namespace perfsim::generators::llm
