// Multi-latent attention and multi-token prediction in the LLM generator (issue 15), worked out
// by hand on a tiny DeepSeek-shaped model: 2 layers, h 256, 4 heads, q_lora_rank 96,
// kv_lora_rank 64, nope 32 + rope 16 (q/k head 48), v 24, SwiGLU of 512, sequence 128,
// micro-batch 1, 2 micro-batches. Megatron-Core's MLASelfAttention: linear_q_down_proj
// [h, 96] and linear_kv_down_proj [h, 64 + 16] whole on every TP rank on the rank's own SP
// tokens, linear_q_up_proj [96, heads 48] and linear_kv_up_proj [64, heads (32 + 24)]
// column-parallel, linear_proj [heads 24, h] row-parallel.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "generators/llm/llm_flops.hpp"
#include "generators/llm/llm_local_shapes.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "kernels/op_kernel_registry.hpp"
#include "memory/llm_memory.hpp"
#include "perfsim/error.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_int_attribute;
using test_support::op_phase;

constexpr std::int64_t kTokens = 128;
constexpr std::int64_t kHidden = 256;
constexpr std::int64_t kBf16 = 2;

using test_support::tiny_mla;

// The ops of (layer, micro-batch 0, phase), in trace order.
std::vector<const Op*> layer_ops(const Trace& trace, int layer, const std::string& in_phase) {
  std::vector<const Op*> ops;
  for (const Op& op : trace.ops)
    if (op_int_attribute(op, "layer") == layer && op_int_attribute(op, "micro_batch") == 0 &&
        op_phase(op) == in_phase)
      ops.push_back(&op);
  return ops;
}

struct Gemm {
  std::int64_t m, k, n;
  bool operator==(const Gemm&) const = default;
};
std::vector<Gemm> gemms(const std::vector<const Op*>& ops) {
  std::vector<Gemm> out;
  for (const Op* op : ops)
    if (op->name == "aten::mm")
      out.push_back({op->inputs.at(0).shape.at(0), op->inputs.at(0).shape.at(1),
                     op->inputs.at(1).shape.at(1)});
  return out;
}

struct Collective {
  CollectiveKind kind;
  Bytes bytes_in, bytes_out;
  bool operator==(const Collective&) const = default;
};
std::vector<Collective> collectives(const std::vector<const Op*>& ops) {
  std::vector<Collective> out;
  for (const Op* op : ops)
    if (op->comm)
      out.push_back({op->comm->kind, op->comm->bytes_in, op->comm->bytes_out});
  return out;
}

TEST(MultiLatentAttention, ForwardGemmShapesUnderTp1) {
  const Trace trace = generate_llm_rank(tiny_mla(), {.tp = 1, .pp = 1, .dp = 1}, 0);
  // q down, kv down (on the 128 own tokens), q up (4 heads x 48), kv up (4 x (32 + 24)),
  // linear_proj (4 x 24 -> h), FC1 (gate and up), FC2.
  const std::vector<Gemm> expected{{128, 256, 96}, {128, 256, 80},   {128, 96, 192}, {128, 64, 224},
                                   {128, 96, 256}, {128, 256, 1024}, {128, 512, 256}};
  EXPECT_EQ(gemms(layer_ops(trace, 0, "forward")), expected);
  EXPECT_TRUE(collectives(layer_ops(trace, 0, "forward")).empty());
}

TEST(MultiLatentAttention, ForwardGemmShapesAndCollectivesUnderTp2) {
  const Trace trace =
      generate_llm_rank(tiny_mla(), {.tp = 2, .pp = 1, .dp = 1, .sequence_parallel = true}, 0);
  // The down projections on the rank's 64 SP tokens with whole weights; the up projections
  // and linear_proj over 2 local heads on the 128 gathered tokens.
  const std::vector<Gemm> expected{{64, 256, 96},  {64, 256, 80},   {128, 96, 96},  {128, 64, 112},
                                   {128, 48, 256}, {128, 256, 512}, {128, 256, 256}};
  const std::vector<const Op*> forward = layer_ops(trace, 0, "forward");
  EXPECT_EQ(gemms(forward), expected);
  // SP all-gathers of the normed q latent, the normed kv latent and k_pe (not of h), then the
  // reduce-scatter after linear_proj and the MLP's gather and reduce-scatter on h.
  const Bytes hidden_full = kTokens * kHidden * kBf16;  // 65536
  const std::vector<Collective> expected_collectives{
      {CollectiveKind::kAllGather, 64 * 96 * kBf16, 128 * 96 * kBf16},
      {CollectiveKind::kAllGather, 64 * 64 * kBf16, 128 * 64 * kBf16},
      {CollectiveKind::kAllGather, 64 * 16 * kBf16, 128 * 16 * kBf16},
      {CollectiveKind::kReduceScatter, hidden_full, hidden_full / 2},
      {CollectiveKind::kAllGather, hidden_full / 2, hidden_full},
      {CollectiveKind::kReduceScatter, hidden_full, hidden_full / 2}};
  EXPECT_EQ(collectives(forward), expected_collectives);
}

TEST(MultiLatentAttention, BackwardGemmsAndCollectivesUnderTp2) {
  const Trace trace =
      generate_llm_rank(tiny_mla(), {.tp = 2, .pp = 1, .dp = 1, .sequence_parallel = true}, 0);
  const std::vector<const Op*> backward = layer_ops(trace, 0, "backward");
  // The attention's GEMMs after the MLP's four: linear_proj data and weight gradient, kv up
  // (data, weight), q up (data, weight), q down data gradient, kv down data gradient, the down
  // projections' weight gradients on the 64 own tokens.
  const std::vector<Gemm> all = gemms(backward);
  ASSERT_EQ(all.size(), 14u);
  const std::vector<Gemm> attention(all.begin() + 4, all.end());
  const std::vector<Gemm> expected{{128, 256, 48}, {48, 128, 256}, {128, 112, 64}, {64, 128, 112},
                                   {128, 96, 96},  {96, 128, 96},  {64, 96, 256},  {64, 80, 256},
                                   {256, 64, 80},  {256, 64, 96}};
  EXPECT_EQ(attention, expected);
  // The latents' data gradients reduce-scattered, their inputs gathered again for the weight
  // gradients, k_pe's gradient reduce-scattered; nothing on h after linear_proj's gradient
  // gather (multi-head attention would reduce-scatter the QKV data gradient on h).
  const Bytes hidden_full = kTokens * kHidden * kBf16;
  const std::vector<Collective> all_collectives = collectives(backward);
  ASSERT_EQ(all_collectives.size(), 9u);
  const std::vector<Collective> mla(all_collectives.begin() + 3, all_collectives.end());
  const std::vector<Collective> expected_collectives{
      {CollectiveKind::kAllGather, hidden_full / 2, hidden_full},  // linear_proj's gradient
      {CollectiveKind::kReduceScatter, 128 * 64 * kBf16, 64 * 64 * kBf16},
      {CollectiveKind::kAllGather, 64 * 64 * kBf16, 128 * 64 * kBf16},
      {CollectiveKind::kReduceScatter, 128 * 16 * kBf16, 64 * 16 * kBf16},
      {CollectiveKind::kReduceScatter, 128 * 96 * kBf16, 64 * 96 * kBf16},
      {CollectiveKind::kAllGather, 64 * 96 * kBf16, 128 * 96 * kBf16}};
  EXPECT_EQ(mla, expected_collectives);
}

TEST(MultiLatentAttention, FlashAttentionWithItsOwnValueHeadDimension) {
  const Trace trace = generate_llm_rank(tiny_mla(), {.tp = 1, .pp = 1, .dp = 1}, 0);
  const std::vector<const Op*> forward = layer_ops(trace, 0, "forward");
  const auto attention = std::find_if(forward.begin(), forward.end(), [](const Op* op) {
    return op->name == "aten::_scaled_dot_product_flash_attention";
  });
  ASSERT_NE(attention, forward.end());
  const Op& op = **attention;
  EXPECT_EQ(op.inputs.at(0).shape, (std::vector<std::int64_t>{1, 4, 128, 48}));
  EXPECT_EQ(op.inputs.at(1).shape, (std::vector<std::int64_t>{1, 4, 128, 48}));
  EXPECT_EQ(op.inputs.at(2).shape, (std::vector<std::int64_t>{1, 4, 128, 24}));
  // Causal: half of 2 heads s^2 (48 + 24) = 4 x 128^2 x 72.
  const kernels::OpExpansion expansion = kernels::expand_op(op);
  ASSERT_EQ(expansion.kernels.size(), 1u);
  const auto& work = std::get<kernels::AttentionWork>(expansion.kernels.at(0).work);
  EXPECT_EQ(work.value_dim(), 24);
  EXPECT_DOUBLE_EQ(work.flops(), 4.0 * 128 * 128 * 72);
  // Backward: half of 2 heads s^2 (3 x 48 + 2 x 24).
  kernels::AttentionWork backward = work;
  backward.backward = true;
  EXPECT_DOUBLE_EQ(backward.flops(), 4.0 * 128 * 128 * (3 * 48 + 2 * 24));
}

TEST(MultiLatentAttention, LayerFlopsAndParameters) {
  const TransformerConfig model = tiny_mla();
  // Per token: q down 2 x 256 x 96, kv down 2 x 256 x 80, q up 2 x 96 x 192, kv up
  // 2 x 64 x 224, linear_proj 2 x 96 x 256, SwiGLU MLP 2 x 256 x 512 x 3; attention 2 s^2
  // heads (48 + 24) per sequence.
  const double per_token = 2.0 * 256 * 96 + 2.0 * 256 * 80 + 2.0 * 96 * 192 + 2.0 * 64 * 224 +
                           2.0 * 96 * 256 + 2.0 * 256 * 512 * 3;
  const double attention = 2.0 * 128 * 128 * 4 * 72;
  EXPECT_DOUBLE_EQ(layer_forward_flops(model, 1), 128 * per_token + attention);
  // The generated GEMMs of one layer's forward at TP 1 compute the same (the causal kernel
  // half of the attention).
  const Trace trace = generate_llm_rank(model, {.tp = 1, .pp = 1, .dp = 1}, 0);
  double gemm_flops = 0, attention_flops = 0;
  for (const Op* op : layer_ops(trace, 0, "forward")) {
    const Attribute* flops = op->find_attribute("flops");
    if (!flops)
      continue;
    if (op->name == "aten::mm")
      gemm_flops += std::get<double>(flops->value);
    if (op->name == "aten::_scaled_dot_product_flash_attention")
      attention_flops += std::get<double>(flops->value);
  }
  EXPECT_DOUBLE_EQ(gemm_flops, 128 * per_token);
  EXPECT_DOUBLE_EQ(attention_flops, attention / 2);
  // Parameters per rank: TP 1 and TP 2 (the down projections and latent norms whole).
  const LocalShapes tp1 = local_shapes(model, {.tp = 1, .pp = 1, .dp = 1});
  EXPECT_EQ(tp1.attention_parameters(),
            256 * 96 + 96 * 192 + 256 * 80 + 64 * 224 + 96 * 256 + 96 + 64 + 2 * 256);
  EXPECT_EQ(tp1.layer_parameters(), tp1.attention_parameters() + 256 * 1024 + 512 * 256);
  const LocalShapes tp2 =
      local_shapes(model, {.tp = 2, .pp = 1, .dp = 1, .sequence_parallel = true});
  EXPECT_EQ(tp2.attention_parameters(),
            256 * 96 + 96 * 96 + 256 * 80 + 64 * 112 + 48 * 256 + 96 + 64 + 2 * 256);
}

TEST(MultiLatentAttention, GradientReductionFollowsTheWeights) {
  // DP 2, no overlap: one all-reduce of the stage's fp32 gradients after the backward.
  TransformerConfig model = tiny_mla();
  // An output layer of its own (untied): the counts below include its weights.
  model.tied_embeddings = false;
  const ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 2};
  const Trace trace = generate_llm_rank(model, parallel, 0);
  Bytes reduced = 0;
  for (const Op& op : trace.ops)
    if (op.comm && op_phase(op) == "grad-sync")
      reduced += op.comm->bytes_in;
  const LocalShapes shapes = local_shapes(model, parallel);
  // Two layers, the embedding and the LM head (first and last stage), the final norm.
  const Bytes parameters =
      2 * shapes.layer_parameters() + 2 * shapes.embedding_parameters() + shapes.hidden;
  EXPECT_EQ(reduced, parameters * 4);
}

TEST(MultiLatentAttention, UncompressedQueriesUseOneColumnParallelProjection) {
  // DeepSeek-V2-Lite: q_lora_rank 0, linear_q_proj [h, heads x 48] on the gathered h.
  TransformerConfig model = tiny_mla();
  model.mla.q_lora_rank = 0;
  const Trace trace =
      generate_llm_rank(model, {.tp = 2, .pp = 1, .dp = 1, .sequence_parallel = true}, 0);
  const std::vector<Gemm> expected{{128, 256, 96}, {64, 256, 80},   {128, 64, 112},
                                   {128, 48, 256}, {128, 256, 512}, {128, 256, 256}};
  const std::vector<const Op*> forward = layer_ops(trace, 0, "forward");
  std::vector<Gemm> got = gemms(forward);
  // linear_q_proj runs after the kv down projection in the trace; compare as a set of shapes.
  std::sort(got.begin(), got.end(), [](const Gemm& a, const Gemm& b) {
    return std::tie(a.m, a.k, a.n) < std::tie(b.m, b.k, b.n);
  });
  std::vector<Gemm> sorted = expected;
  std::sort(sorted.begin(), sorted.end(), [](const Gemm& a, const Gemm& b) {
    return std::tie(a.m, a.k, a.n) < std::tie(b.m, b.k, b.n);
  });
  EXPECT_EQ(got, sorted);
  EXPECT_EQ(collectives(forward).front().bytes_out, kTokens * kHidden * kBf16);  // h gathered
}

TEST(MultiTokenPrediction, LastStageRunsTheModules) {
  TransformerConfig model = tiny_mla();
  model.mtp_num_layers = 1;
  const ParallelConfig parallel{.tp = 1, .pp = 2, .dp = 1};
  const Trace first = generate_llm_rank(model, parallel, 0);
  const Trace last = generate_llm_rank(model, parallel, 1);
  auto count = [](const Trace& trace, const std::string& name, const std::string& in_phase) {
    return std::count_if(trace.ops.begin(), trace.ops.end(),
                         [&](const Op& op) { return op.name == name && op_phase(op) == in_phase; });
  };
  // Per micro-batch on the last stage: the shifted tokens' embedding, a second loss (its
  // three TP-free reductions: amax and two sums), the module's layer (layer index 2).
  EXPECT_EQ(count(last, "aten::embedding", "forward"), 2);
  EXPECT_EQ(count(first, "aten::embedding", "forward"), 2);  // the model's own
  EXPECT_EQ(count(last, "aten::amax", "loss"), 2 * 2);
  EXPECT_EQ(count(first, "aten::amax", "loss"), 0);
  EXPECT_EQ(count(last, "aten::embedding_dense_backward", "backward"), 2);
  EXPECT_TRUE(layer_ops(first, 2, "forward").empty());
  const std::vector<const Op*> module = layer_ops(last, 2, "forward");
  const std::vector<Gemm> module_gemms = gemms(module);
  ASSERT_FALSE(module_gemms.empty());
  // eh_proj [2h -> h] first, then the layer's q down projection; the logits last.
  EXPECT_EQ(module_gemms.front(), (Gemm{128, 512, 256}));
  EXPECT_EQ(module_gemms.at(1), (Gemm{128, 256, 96}));
  EXPECT_EQ(module_gemms.back(), (Gemm{128, 256, 1024}));
  // Model FLOPs: the module's eh_proj, layer and logits per sequence, forward and backward.
  const double per_sequence =
      2.0 * 512 * 256 * 128 + layer_forward_flops(model, 1) + logits_forward_flops(model, 1);
  TransformerConfig without = model;
  without.mtp_num_layers = 0;
  EXPECT_DOUBLE_EQ(model_flops_per_iteration(model, 2) - model_flops_per_iteration(without, 2),
                   3 * 2 * per_sequence);
  // The memory closed form counts the module on the last stage only.
  const memory::LlmMemoryEstimate with_mtp = memory::estimate_llm_memory(model, parallel, {});
  const memory::LlmMemoryEstimate plain = memory::estimate_llm_memory(without, parallel, {});
  EXPECT_EQ(with_mtp.stages.at(0).total_bytes, plain.stages.at(0).total_bytes);
  EXPECT_GT(with_mtp.stages.at(1).total_bytes, plain.stages.at(1).total_bytes);
}

// FP8 (Transformer Engine recipe): every linear layer of the MLA block and MTP's eh_proj reads
// FP8 operands (its input cast once per use, its weight's copy made at the first micro-batch);
// the attention itself stays bf16.
std::int64_t fp8_gemms(const std::vector<const Op*>& ops) {
  return std::count_if(ops.begin(), ops.end(), [](const Op* op) {
    return op->name == "aten::mm" && op->inputs.at(0).dtype == DType::kFloat8 &&
           op->inputs.at(1).dtype == DType::kFloat8;
  });
}
std::int64_t ops_named(const std::vector<const Op*>& ops, const std::string& name) {
  return std::count_if(ops.begin(), ops.end(), [&](const Op* op) { return op->name == name; });
}

TEST(MultiLatentAttention, Fp8CastsEveryLinearLayerAndKeepsAttentionBf16) {
  TransformerConfig model = tiny_mla();
  model.dtype = DType::kFloat8;
  const Trace trace = generate_llm_rank(model, {.tp = 1, .pp = 1, .dp = 1}, 0);
  const std::vector<const Op*> forward = layer_ops(trace, 0, "forward");
  // The 7 GEMMs of ForwardGemmShapesUnderTp1, all in FP8, same shapes.
  const std::vector<Gemm> expected{{128, 256, 96}, {128, 256, 80},   {128, 96, 192}, {128, 64, 224},
                                   {128, 96, 256}, {128, 256, 1024}, {128, 512, 256}};
  EXPECT_EQ(gemms(forward), expected);
  EXPECT_EQ(fp8_gemms(forward), 7);
  // Micro-batch 0 casts the 7 weights (q down, q up, kv down, kv up, linear_proj, FC1, FC2)
  // and the 7 GEMM inputs.
  EXPECT_EQ(ops_named(forward, "te::cast_transpose"), 7 + 7);
  for (const Op* op : forward) {
    if (op->name != "aten::_scaled_dot_product_flash_attention")
      continue;
    for (const TensorRef& input : op->inputs)
      EXPECT_NE(input.dtype, DType::kFloat8);
  }
  // Backward: 14 GEMMs (data and weight gradient of each), all FP8; each output gradient cast
  // to E5M2 once (7 casts), inputs re-read from the forward's transposes (no SP gather).
  const std::vector<const Op*> backward = layer_ops(trace, 0, "backward");
  EXPECT_EQ(gemms(backward).size(), 14u);
  EXPECT_EQ(fp8_gemms(backward), 14);
  EXPECT_EQ(ops_named(backward, "te::cast_transpose"), 7);
  // With SP over TP 2 the up projections' latents are gathered again in bf16 for the weight
  // gradients and cast again there (q and kv up: 2 casts more than the 7 output gradients,
  // and the MLP's FC1 input as for dense layers).
  const Trace sp =
      generate_llm_rank(model, {.tp = 2, .pp = 1, .dp = 1, .sequence_parallel = true}, 0);
  EXPECT_EQ(fp8_gemms(layer_ops(sp, 0, "backward")), 14);
  EXPECT_EQ(ops_named(layer_ops(sp, 0, "backward"), "te::cast_transpose"), 7 + 2 + 1);
  // BF16: none of it.
  const Trace bf16 = generate_llm_rank(tiny_mla(), {.tp = 1, .pp = 1, .dp = 1}, 0);
  EXPECT_EQ(fp8_gemms(layer_ops(bf16, 0, "forward")), 0);
  EXPECT_EQ(ops_named(layer_ops(bf16, 0, "forward"), "te::cast_transpose"), 0);
}

TEST(MultiTokenPrediction, Fp8CastsEhProjAndTheModuleLayer) {
  TransformerConfig model = tiny_mla();
  model.dtype = DType::kFloat8;
  model.mtp_num_layers = 1;
  const Trace last = generate_llm_rank(model, {.tp = 1, .pp = 2, .dp = 1}, 1);
  const std::vector<const Op*> module = layer_ops(last, 2, "forward");
  // eh_proj, the layer's 7 GEMMs in FP8; the logits stay bf16 (Megatron's output layer).
  EXPECT_EQ(fp8_gemms(module), 1 + 7);
  EXPECT_EQ(ops_named(module, "te::cast_transpose"), 2 * (1 + 7));
  EXPECT_EQ(fp8_gemms(layer_ops(last, 2, "backward")), 2 * (1 + 7));
}

// overlap_param_gather: MLA layers' weights (down and up projections too) are read from the
// bucket all-gathered for their first forward, and the MTP module's parameters close the last
// stage's buffer.
TEST(MultiLatentAttention, OverlappedParameterGatherCoversMlaAndMtp) {
  TransformerConfig model = tiny_mla();
  model.mtp_num_layers = 1;
  ParallelConfig parallel{.tp = 1, .pp = 2, .dp = 2, .zero_stage = 1};
  parallel.overlap_grad_reduce = true;
  parallel.overlap_param_gather = true;
  ASSERT_NO_THROW(validate(model, parallel));
  auto gathered_elements = [](const Trace& trace) {
    std::int64_t elements = 0;
    for (const Op& op : trace.ops)
      if (op.comm && op.comm->kind == CollectiveKind::kAllGather)
        elements += op.outputs.at(0).numel;
    return elements;
  };
  TransformerConfig without = model;
  without.mtp_num_layers = 0;
  // The last stage gathers its layer, head and final norm, plus the module (its layer,
  // eh_proj [2h, h], 3 norms) and its embedding copy; rounded up to whole shards of DP 2.
  const LocalShapes shapes = local_shapes(model, parallel);
  const std::int64_t module = shapes.layer_parameters() + 2 * kHidden * kHidden + 3 * kHidden +
                              shapes.embedding_parameters();
  // Rank 2: the last stage (DP before PP in Megatron's rank order).
  const std::int64_t with_mtp = gathered_elements(generate_llm_rank(model, parallel, 2));
  const std::int64_t plain = gathered_elements(generate_llm_rank(without, parallel, 2));
  EXPECT_GE(with_mtp - plain, module - 1);
  EXPECT_LE(with_mtp - plain, module + 1);
  // The first forward's q down projection reads the gathered bucket: it follows the gather.
  const Trace first = generate_llm_rank(without, parallel, 0);
  const auto gather = std::find_if(first.ops.begin(), first.ops.end(), [](const Op& op) {
    return op.comm && op.comm->kind == CollectiveKind::kAllGather;
  });
  ASSERT_NE(gather, first.ops.end());
  const std::vector<const Op*> forward = layer_ops(first, 0, "forward");
  const auto q_down = std::find_if(forward.begin(), forward.end(),
                                   [](const Op* op) { return op->name == "aten::mm"; });
  ASSERT_NE(q_down, forward.end());
  EXPECT_EQ((*q_down)->inputs.at(1).storage_id, gather->outputs.at(0).storage_id);
}

std::string error_of(const std::string& json) {
  try {
    parse_transformer_config(json, "m.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(MultiLatentAttentionModelFile, BadFieldsAreNamedErrors) {
  const std::string base =
      R"({"schema": "perfsim-llm-model/1", "name": "x", "layers": 2, "hidden": 256, "heads": 4,
          "ffn_hidden": 512, "vocab": 1024, "seq_len": 128, "position_embedding": "rope")";
  const std::string mla =
      R"(, "kv_lora_rank": 64, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 24)";
  EXPECT_EQ(error_of(base + mla + "}"), "");
  EXPECT_NE(error_of(base + R"(, "q_lora_rank": 96})").find("q_lora_rank"), std::string::npos);
  EXPECT_NE(error_of(base + R"(, "kv_lora_rank": 64})").find("qk_nope_head_dim"),
            std::string::npos);
  const std::string odd_rope =
      R"(, "kv_lora_rank": 64, "qk_nope_head_dim": 32, "qk_rope_head_dim": 15, "v_head_dim": 24})";
  EXPECT_NE(error_of(base + odd_rope).find("qk_rope_head_dim"), std::string::npos);
  EXPECT_NE(error_of(base + mla + R"(, "q_lora_rank": -1})").find("q_lora_rank"),
            std::string::npos);
  EXPECT_NE(error_of(base + mla + R"(, "kv_heads": 2})").find("kv_heads"), std::string::npos);
  EXPECT_NE(error_of(base + mla + R"(, "mtp_num_layers": -1})").find("mtp_num_layers"),
            std::string::npos);
  std::string learned = base + mla + "}";
  learned.replace(learned.find("\"rope\""), 6, "\"learned\"");
  EXPECT_NE(error_of(learned).find("position_embedding"), std::string::npos);
  // Layouts the emitter does not model are refused by name; FP8 is modelled.
  TransformerConfig model = tiny_mla();
  model.dtype = DType::kFloat8;
  EXPECT_NO_THROW(validate(model, ParallelConfig{.tp = 1, .pp = 1, .dp = 1}));
  try {
    validate(model, ParallelConfig{.tp = 1, .pp = 1, .dp = 2, .zero_stage = 3});
    ADD_FAILURE() << "ZeRO-3 with MLA was not refused";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("zero"), std::string::npos) << error.what();
  }
}

TEST(MultiLatentAttentionModelFile, ShippedDeepSeekFiles) {
  const std::string models = std::string(PERFSIM_SOURCE_DIR) + "/configs/models/";
  const TransformerConfig v3 = load_transformer_config(models + "deepseek-v3.json");
  EXPECT_EQ(v3.mla.q_lora_rank, 1536);
  EXPECT_EQ(v3.mla.kv_lora_rank, 512);
  EXPECT_EQ(v3.mla.q_head_dim(), 192);
  EXPECT_EQ(v3.mla.v_head_dim, 128);
  EXPECT_EQ(v3.mtp_num_layers, 1);
  EXPECT_EQ(v3.moe_layer_count(), 58);
  // The report's 671B parameters (main model, MTP excluded): every weight at TP 1, EP 1.
  const ParallelConfig whole{.tp = 1, .pp = 1, .dp = 1};
  const LocalShapes shapes = local_shapes(v3, whole);
  const double dense_layer = static_cast<double>(shapes.layer_parameters());
  const double moe_layer = static_cast<double>(shapes.moe_dense_parameters()) +
                           static_cast<double>(shapes.local_expert_parameters());
  const double total = 3 * dense_layer + 58 * moe_layer +
                       2.0 * v3.vocab * v3.hidden /* embedding and head */ + v3.hidden;
  EXPECT_NEAR(total / 1e9, 671.0, 671.0 * 0.005);
  const TransformerConfig lite = load_transformer_config(models + "deepseek-v2-lite.json");
  EXPECT_EQ(lite.mla.q_lora_rank, 0);
  EXPECT_EQ(lite.mla.kv_lora_rank, 512);
}

}  // namespace
}  // namespace perfsim::generators::llm
