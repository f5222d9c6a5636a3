// Megatron-Core's element-wise fusions in the LLM generator (issue 15): the fused SwiGLU
// (bias_activation_fusion) and Transformer Engine's fused rotary embedding (apply_rope_fusion),
// each on by default with a switch back to PyTorch's unfused ops, the fused cross entropy
// (cross_entropy_loss_fusion, off by default), and the model files' position_embedding field. Op
// counts and bytes are worked out by hand for a tiny Llama (test_support::tiny_llama: 4 layers, h
// 256, 8 heads of 32, 4 KV heads, SwiGLU of 704, sequence 128, micro-batch 1, 8 micro-batches) on
// one TP 2 rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "generators/llm/llm_rank_generator.hpp"
#include "kernels/op_kernel_registry.hpp"
#include "perfsim/error.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

constexpr std::int64_t kMicroBatches = 8;  // global batch 8, micro-batch 1, DP 1
constexpr std::int64_t kLayers = 4;
constexpr std::int64_t kTokens = 128;    // s b: the MLP and the attention see every token
constexpr std::int64_t kFfnLocal = 352;  // 704 / TP 2
constexpr std::int64_t kHeadsLocal = 4, kKvHeadsLocal = 2, kHeadDim = 32;
constexpr double kBf16Bytes = 2, kFp32Bytes = 4;

std::int64_t count_ops(const Trace& trace, const std::string& name, const std::string& phase) {
  return std::count_if(trace.ops.begin(), trace.ops.end(),
                       [&](const Op& op) { return op.name == name && op_phase(op) == phase; });
}

const Op& first_op(const Trace& trace, const std::string& name) {
  const auto it = std::find_if(trace.ops.begin(), trace.ops.end(),
                               [&](const Op& op) { return op.name == name; });
  if (it == trace.ops.end())
    throw std::runtime_error("no op " + name);
  return *it;
}

// What the kernel registry prices for `op`: bytes read and written by its one element-wise
// kernel.
kernels::ElementwiseWork priced_work(const Op& op) {
  const kernels::OpExpansion expansion = kernels::expand_op(op);
  EXPECT_EQ(expansion.status, kernels::ExpansionStatus::kModeled) << op.name;
  EXPECT_EQ(expansion.kernels.size(), 1u) << op.name;
  return std::get<kernels::ElementwiseWork>(expansion.kernels.at(0).work);
}

Trace tiny_llama_rank(bool swiglu_fusion, bool rope_fusion,
                      PositionEmbedding embedding = PositionEmbedding::kRope,
                      CrossEntropyFusion cross_entropy_fusion = CrossEntropyFusion::kNone) {
  TransformerConfig model = test_support::tiny_llama();
  model.position_embedding = embedding;
  model.bias_swiglu_fusion = swiglu_fusion;
  model.rope_fusion = rope_fusion;
  model.cross_entropy_fusion = cross_entropy_fusion;
  const ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 1};
  return generate_llm_rank(model, parallel, 0);
}

TEST(MegatronFusions, FusedSwigluIsOnePassEachWay) {
  const Trace trace = tiny_llama_rank(true, true);
  EXPECT_EQ(count_ops(trace, "megatron::bias_swiglu", "forward"), kLayers * kMicroBatches);
  EXPECT_EQ(count_ops(trace, "megatron::bias_swiglu_backward", "backward"),
            kLayers * kMicroBatches);
  EXPECT_EQ(count_ops(trace, "aten::sigmoid", "forward"), 0);
  EXPECT_EQ(count_ops(trace, "aten::sigmoid_backward", "backward"), 0);
  // Forward: reads gate and up [128, 352] each, writes their product.
  const double half = kTokens * kFfnLocal * kBf16Bytes;  // 90112 bytes
  const kernels::ElementwiseWork forward = priced_work(first_op(trace, "megatron::bias_swiglu"));
  EXPECT_DOUBLE_EQ(forward.bytes_read, 2 * half);
  EXPECT_DOUBLE_EQ(forward.bytes_written, half);
  // Backward: reads the output gradient and the saved input (gate and up), writes both
  // gradients.
  const kernels::ElementwiseWork backward =
      priced_work(first_op(trace, "megatron::bias_swiglu_backward"));
  EXPECT_DOUBLE_EQ(backward.bytes_read, 3 * half);
  EXPECT_DOUBLE_EQ(backward.bytes_written, 2 * half);
}

TEST(MegatronFusions, UnfusedSwigluIsSigmoidAndTwoMultiplies) {
  const Trace fused = tiny_llama_rank(true, true);
  const Trace unfused = tiny_llama_rank(false, true);
  const std::int64_t layer_passes = kLayers * kMicroBatches;
  EXPECT_EQ(count_ops(unfused, "megatron::bias_swiglu", "forward"), 0);
  EXPECT_EQ(count_ops(unfused, "aten::sigmoid", "forward"), layer_passes);
  EXPECT_EQ(count_ops(unfused, "aten::mul", "forward") - count_ops(fused, "aten::mul", "forward"),
            2 * layer_passes);
  EXPECT_EQ(count_ops(unfused, "aten::sigmoid_backward", "backward"), layer_passes);
  EXPECT_EQ(count_ops(unfused, "aten::mul", "backward") - count_ops(fused, "aten::mul", "backward"),
            2 * layer_passes);
}

TEST(MegatronFusions, FusedRopeRotatesLocalQueriesAndKeys) {
  const Trace trace = tiny_llama_rank(true, true);
  // One kernel for q and one for k, per layer and micro-batch, each way.
  EXPECT_EQ(count_ops(trace, "te::fused_rope", "forward"), 2 * kLayers * kMicroBatches);
  EXPECT_EQ(count_ops(trace, "te::fused_rope_backward", "backward"), 2 * kLayers * kMicroBatches);
  // q: [b 1, 4 local heads, s 128, d 32]; k: 2 local KV heads (GQA 4 / TP 2).
  const double q_bytes = kHeadsLocal * kTokens * kHeadDim * kBf16Bytes;    // 32768
  const double k_bytes = kKvHeadsLocal * kTokens * kHeadDim * kBf16Bytes;  // 16384
  const double frequencies = kTokens * kHeadDim * kFp32Bytes;              // 16384, fp32 [s, d]
  std::vector<double> read, written;
  for (const Op& op : trace.ops)
    if (op.name == "te::fused_rope" && read.size() < 2) {
      const kernels::ElementwiseWork work = priced_work(op);
      read.push_back(work.bytes_read);
      written.push_back(work.bytes_written);
    }
  ASSERT_EQ(read.size(), 2u);
  EXPECT_DOUBLE_EQ(read[0], q_bytes + frequencies);
  EXPECT_DOUBLE_EQ(written[0], q_bytes);
  EXPECT_DOUBLE_EQ(read[1], k_bytes + frequencies);
  EXPECT_DOUBLE_EQ(written[1], k_bytes);
  // The attention reads the rotated tensors.
  const Op& attention = first_op(trace, "aten::_scaled_dot_product_flash_attention");
  const Op& rope_q = first_op(trace, "te::fused_rope");
  EXPECT_EQ(attention.inputs.at(0).tensor_id, rope_q.outputs.at(0).tensor_id);
}

TEST(MegatronFusions, UnfusedRopeIsPyTorchsRotateHalf) {
  const Trace fused = tiny_llama_rank(true, true);
  const Trace unfused = tiny_llama_rank(true, false);
  const std::int64_t tensors = 2 * kLayers * kMicroBatches;  // q and k
  EXPECT_EQ(count_ops(unfused, "te::fused_rope", "forward"), 0);
  // Forward per tensor: neg, cat, mul, mul, add, cat.
  EXPECT_EQ(count_ops(unfused, "aten::neg", "forward"), tensors);
  EXPECT_EQ(count_ops(unfused, "aten::cat", "forward"), 2 * tensors);
  EXPECT_EQ(count_ops(unfused, "aten::mul", "forward") - count_ops(fused, "aten::mul", "forward"),
            2 * tensors);
  // Backward per tensor: two multiplies, neg, cat, add.
  EXPECT_EQ(count_ops(unfused, "aten::neg", "backward"), tensors);
  EXPECT_EQ(count_ops(unfused, "aten::cat", "backward"), tensors);
  EXPECT_EQ(count_ops(unfused, "aten::mul", "backward") - count_ops(fused, "aten::mul", "backward"),
            2 * tensors);
}

TEST(MegatronFusions, LearnedPositionsEmitNoRotaryKernel) {
  const Trace trace = tiny_llama_rank(true, true, PositionEmbedding::kLearned);
  EXPECT_EQ(count_ops(trace, "te::fused_rope", "forward"), 0);
  EXPECT_EQ(count_ops(trace, "te::fused_rope_backward", "backward"), 0);
  EXPECT_EQ(count_ops(trace, "aten::neg", "forward"), 0);
  // The attention reads the QKV output directly.
  const Op& attention = first_op(trace, "aten::_scaled_dot_product_flash_attention");
  EXPECT_EQ(attention.inputs.at(0).tensor_id, first_op(trace, "aten::mm").outputs.at(0).tensor_id);
}

std::int64_t count_phase_ops(const Trace& trace, const std::string& phase, bool collectives) {
  return std::count_if(trace.ops.begin(), trace.ops.end(), [&](const Op& op) {
    return op_phase(op) == phase && op.comm.has_value() == collectives;
  });
}

// The loss of one micro-batch on the last stage: logits [128 tokens, 1024 = 2048 / TP 2].
TEST(MegatronFusions, FusedCrossEntropyIsThreePassesAndTwoAllReduces) {
  const Trace unfused = tiny_llama_rank(true, true);
  const Trace fused =
      tiny_llama_rank(true, true, PositionEmbedding::kRope, CrossEntropyFusion::kNative);
  // Unfused: cast, max, subtract, target sum, exp, row sum, divide; an all-reduce after each of
  // the three reductions. Fused: three kernels, the target logits and sums in one all-reduce.
  EXPECT_EQ(count_phase_ops(unfused, "loss", false), 7 * kMicroBatches);
  EXPECT_EQ(count_phase_ops(unfused, "loss", true), 3 * kMicroBatches);
  EXPECT_EQ(count_phase_ops(fused, "loss", false), 3 * kMicroBatches);
  EXPECT_EQ(count_phase_ops(fused, "loss", true), 2 * kMicroBatches);
  constexpr double kElements = kTokens * 1024;
  constexpr double kPerToken = kTokens * kFp32Bytes;
  const kernels::ElementwiseWork max =
      priced_work(first_op(fused, "megatron::fused_ce_logits_max"));
  EXPECT_DOUBLE_EQ(max.bytes_read, kElements * kBf16Bytes);
  EXPECT_DOUBLE_EQ(max.bytes_written, kElements * kFp32Bytes + kPerToken);
  const kernels::ElementwiseWork exp =
      priced_work(first_op(fused, "megatron::fused_ce_predicted_logits"));
  EXPECT_DOUBLE_EQ(exp.bytes_read, kElements * kFp32Bytes + kPerToken);
  EXPECT_DOUBLE_EQ(exp.bytes_written, kElements * kFp32Bytes + 2 * kPerToken);
  const kernels::ElementwiseWork loss = priced_work(first_op(fused, "megatron::fused_ce_loss"));
  EXPECT_DOUBLE_EQ(loss.bytes_read, kElements * kFp32Bytes + 2 * kPerToken);
  EXPECT_DOUBLE_EQ(loss.bytes_written, kElements * kFp32Bytes);
  // The backward is Megatron's either way: scale the saved softmax, cast to bf16.
  EXPECT_EQ(count_ops(fused, "aten::copy_", "backward"),
            count_ops(unfused, "aten::copy_", "backward"));
  EXPECT_EQ(count_ops(fused, "aten::mul_", "backward"),
            count_ops(unfused, "aten::mul_", "backward"));
}

TEST(MegatronFusions, TransformerEngineCrossEntropyKeepsTheBf16GradientInPlace) {
  const Trace unfused = tiny_llama_rank(true, true);
  const Trace fused =
      tiny_llama_rank(true, true, PositionEmbedding::kRope, CrossEntropyFusion::kTe);
  // Two kernels and one all-gather of each token's max, sum and target logit.
  EXPECT_EQ(count_phase_ops(fused, "loss", false), 2 * kMicroBatches);
  EXPECT_EQ(count_phase_ops(fused, "loss", true), kMicroBatches);
  constexpr double kElements = kTokens * 1024;
  const kernels::ElementwiseWork online =
      priced_work(first_op(fused, "te::cross_entropy_online_softmax"));
  EXPECT_DOUBLE_EQ(online.bytes_read, kElements * kBf16Bytes);
  EXPECT_DOUBLE_EQ(online.bytes_written, 3 * kTokens * kFp32Bytes);
  const kernels::ElementwiseWork loss = priced_work(first_op(fused, "te::cross_entropy_loss_grad"));
  // The logits and the gathered statistics of both TP ranks; the gradient and the loss.
  EXPECT_DOUBLE_EQ(loss.bytes_read, kElements * kBf16Bytes + 2 * 3 * kTokens * kFp32Bytes);
  EXPECT_DOUBLE_EQ(loss.bytes_written, kElements * kBf16Bytes + kTokens * kFp32Bytes);
  // Backward: one scaling pass over the bf16 gradient replaces the fp32 multiply and the cast.
  const kernels::ElementwiseWork scale =
      priced_work(first_op(fused, "te::cross_entropy_grad_scale"));
  EXPECT_DOUBLE_EQ(scale.bytes_read, kElements * kBf16Bytes + kTokens * kFp32Bytes);
  EXPECT_DOUBLE_EQ(scale.bytes_written, kElements * kBf16Bytes);
  EXPECT_EQ(count_ops(fused, "aten::copy_", "backward") + kMicroBatches,
            count_ops(unfused, "aten::copy_", "backward"));
}

TEST(MegatronFusions, CrossEntropyFusionNames) {
  EXPECT_EQ(parse_cross_entropy_fusion("te", "t.csv", "c"), CrossEntropyFusion::kTe);
  EXPECT_EQ(cross_entropy_fusion_name(CrossEntropyFusion::kNative), "native");
  EXPECT_THROW(parse_cross_entropy_fusion("fused", "t.csv", "c"), InputError);
}

TEST(MegatronFusions, PositionEmbeddingField) {
  const std::string base =
      R"({"schema": "perfsim-llm-model/1", "name": "m", "layers": 2, "hidden": 64, "heads": 4,
          "ffn_hidden": 256, "vocab": 128, "seq_len": 32)";
  EXPECT_EQ(parse_transformer_config(base + "}", "m.json").position_embedding,
            PositionEmbedding::kLearned);
  EXPECT_EQ(parse_transformer_config(base + R"(, "position_embedding": "rope"})", "m.json")
                .position_embedding,
            PositionEmbedding::kRope);
  try {
    parse_transformer_config(base + R"(, "position_embedding": "alibi"})", "m.json");
    FAIL() << "alibi accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("position_embedding"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("m.json"), std::string::npos);
  }
}

TEST(MegatronFusions, EveryShippedModelFileStatesItsPositionEmbedding) {
  // GPT-2/3 shapes learn absolute positions; Llama, Mixtral and DeepSeek rotate.
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(PERFSIM_SOURCE_DIR) + "/configs/models")) {
    if (entry.path().extension() != ".json")
      continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json doc = nlohmann::json::parse(text.str());
    SCOPED_TRACE(entry.path().string());
    ASSERT_TRUE(doc.contains("position_embedding"));
    const std::string name = doc.at("name").get<std::string>();
    // The GPT-2/3 family learned its positions; GPT-OSS rotates them.
    const bool gpt = (name.rfind("gpt", 0) == 0 && name.rfind("gpt-oss", 0) != 0) ||
                     name.rfind("korthikanti", 0) == 0;
    EXPECT_EQ(doc.at("position_embedding").get<std::string>(), gpt ? "learned" : "rope");
    EXPECT_NE(doc.at("source").get<std::string>().find("position embedding:"), std::string::npos);
    ++files;
  }
  EXPECT_GE(files, 11);
}

}  // namespace
}  // namespace perfsim::generators::llm
