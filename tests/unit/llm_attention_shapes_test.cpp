// Attention shapes of today's open models (issue 15): head_dim (Megatron's kv_channels) apart
// from hidden / heads, QK layer norm, sliding-window attention. Op shapes, bytes and FLOPs worked
// out by hand for the tiny Llama (test_support::tiny_llama: 4 layers, h 256, 8 heads, 4 KV
// heads, SwiGLU of 704, vocabulary 2048, sequence 128, micro-batch 1, 8 micro-batches).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "generators/llm/llm_flops.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "kernels/attention_model.hpp"
#include "kernels/op_kernel_registry.hpp"
#include "perfsim/error.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

constexpr std::int64_t kMicroBatches = 8;
constexpr std::int64_t kLayers = 4;

std::int64_t count_ops(const Trace& trace, const std::string& name, const std::string& phase) {
  return std::count_if(trace.ops.begin(), trace.ops.end(),
                       [&](const Op& op) { return op.name == name && op_phase(op) == phase; });
}

std::string model_file(const std::string& extra) {
  // A hidden of 3000 that 64 heads do not divide: only head_dim gives the head width.
  return R"({"schema": "perfsim-llm-model/1", "name": "m", "layers": 2, "hidden": 3000,
             "heads": 64, "kv_heads": 8, "ffn_hidden": 2880, "vocab": 1024, "seq_len": 256)" +
         extra + "}";
}

TEST(AttentionShapes, HeadDimIsReadAndDefaultsToHiddenOverHeads) {
  // 64 heads of 64 (GPT-OSS's, there over a hidden of 2880) over a hidden of 3000.
  const TransformerConfig oss = parse_transformer_config(model_file(R"(, "head_dim": 64)"), "m");
  EXPECT_EQ(oss.head_dim(), 64);
  EXPECT_EQ(oss.query_width(), 4096);
  const TransformerConfig llama = test_support::tiny_llama();
  EXPECT_EQ(llama.head_dim(), 32);
  EXPECT_EQ(llama.query_width(), 256);
}

TEST(AttentionShapes, BadShapeFieldsNameTheField) {
  auto field_of = [](const std::string& extra) {
    try {
      parse_transformer_config(model_file(extra), "m.json");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  // 3000 / 64 without head_dim: the head width is not whole.
  EXPECT_NE(field_of("").find("hidden"), std::string::npos);
  EXPECT_NE(field_of("").find("head_dim"), std::string::npos);
  EXPECT_NE(field_of(R"(, "head_dim": 0)").find("head_dim"), std::string::npos);
  EXPECT_NE(field_of(R"(, "head_dim": 64, "qk_layernorm": 1)").find("qk_layernorm"),
            std::string::npos);
  EXPECT_NE(field_of(R"(, "head_dim": 64, "window_size": -1)").find("window_size"),
            std::string::npos);
  EXPECT_NE(field_of(R"(, "head_dim": 64, "full_attention_every": 2)").find("full_attention_every"),
            std::string::npos);
  EXPECT_EQ(field_of(R"(, "head_dim": 64, "window_size": 128, "full_attention_every": 2)"),
            "accepted");
}

TEST(AttentionShapes, HeadDimSetsTheQkvGemmsWidthAndTheProjectionsInput) {
  // 8 heads of 48 (384 wide, not 256), 4 KV heads; TP 2: 4 query and 2 KV heads per rank, a
  // QKV GEMM of N = (4 + 2 x 2) x 48 = 384 and a projection of K = 4 x 48 = 192.
  TransformerConfig model = test_support::tiny_llama();
  model.kv_channels = 48;
  const Trace trace = generate_llm_rank(model, ParallelConfig{.tp = 2, .pp = 1, .dp = 1}, 0);
  const auto qkv = std::find_if(trace.ops.begin(), trace.ops.end(),
                                [](const Op& op) { return op.name == "aten::mm"; });
  ASSERT_NE(qkv, trace.ops.end());
  EXPECT_EQ(qkv->inputs.at(0).shape, (std::vector<std::int64_t>{128, 256}));
  EXPECT_EQ(qkv->inputs.at(1).shape, (std::vector<std::int64_t>{256, 384}));
  const auto projection =
      std::find_if(qkv + 1, trace.ops.end(), [](const Op& op) { return op.name == "aten::mm"; });
  ASSERT_NE(projection, trace.ops.end());
  EXPECT_EQ(projection->inputs.at(0).shape, (std::vector<std::int64_t>{128, 192}));
  EXPECT_EQ(projection->inputs.at(1).shape, (std::vector<std::int64_t>{192, 256}));
}

TEST(AttentionShapes, ModelFlopsCountHeadsTimesHeadDim) {
  // Per layer and token: QKV 2 h (8 + 2 x 4) 48 = 393216, projection 2 (8 x 48) h = 196608,
  // SwiGLU MLP 2 h 704 x 3 = 1081344: 1671168; scores and context 4 s s (8 x 48) = 25165824
  // per sequence. Logits 2 s h V = 134217728 per sequence. 8 sequences, x 3 for the backward.
  TransformerConfig model = test_support::tiny_llama();
  model.kv_channels = 48;
  const double layer = 128.0 * 1671168 + 25165824;
  EXPECT_DOUBLE_EQ(layer_forward_flops(model, 1), layer);
  EXPECT_DOUBLE_EQ(model_flops_per_iteration(model, 8), 3.0 * 8 * (4 * layer + 134217728));
}

TEST(AttentionShapes, WindowedLayersCountTheirWindowOfKeys) {
  // Window 32, full attention every second layer: layers 0 and 2 windowed, 1 and 3 full.
  TransformerConfig model = test_support::tiny_llama();
  model.window_size = 32;
  model.full_attention_every = 2;
  EXPECT_TRUE(model.windowed_layer(0));
  EXPECT_FALSE(model.windowed_layer(1));
  EXPECT_TRUE(model.windowed_layer(2));
  EXPECT_FALSE(model.windowed_layer(3));
  // 4 s (s - w) (heads x d) fewer forward FLOPs per sequence in a windowed layer.
  const double saved = 4.0 * 128 * (128 - 32) * 256;
  EXPECT_DOUBLE_EQ(layer_forward_flops(model, 1, 1) - layer_forward_flops(model, 1, 0), saved);
  TransformerConfig full = model;
  full.window_size = 0;
  full.full_attention_every = 0;
  EXPECT_DOUBLE_EQ(model_flops_per_iteration(full, 8) - model_flops_per_iteration(model, 8),
                   3.0 * 8 * 2 * saved);
  // A window no shorter than the sequence is full attention.
  model.window_size = 128;
  EXPECT_DOUBLE_EQ(model_flops_per_iteration(model, 8), model_flops_per_iteration(full, 8));
}

TEST(AttentionShapes, WindowedKernelComputesTheBand) {
  // 8 queries, window 3: 1 + 2 + 3 x 6 = 21 query-key pairs per head (3 x 4 / 2 + 5 x 3).
  kernels::AttentionWork work{.batch_heads = 2,
                              .q_len = 8,
                              .kv_len = 8,
                              .head_dim = 4,
                              .causal = true,
                              .backward = false,
                              .window = 3};
  EXPECT_DOUBLE_EQ(work.band_pairs(), 21);
  EXPECT_DOUBLE_EQ(work.flops(), 4.0 * 2 * 4 * 21);
  work.backward = true;
  EXPECT_DOUBLE_EQ(work.flops(), 10.0 * 2 * 4 * 21);
  EXPECT_EQ(kernels::attention_as_gemm(work).n, 3);  // ceil(21 / 8) keys per query
  // A window as long as the keys: the causal kernel, half of 8 x 8.
  work.window = 8;
  work.backward = false;
  EXPECT_DOUBLE_EQ(work.flops(), 4.0 * 2 * 8 * 8 * 4 / 2);
}

TEST(AttentionShapes, WindowedLayersFlashAttentionCarriesTheWindow) {
  TransformerConfig model = test_support::tiny_llama();
  model.window_size = 32;
  model.full_attention_every = 2;
  const Trace trace = generate_llm_rank(model, ParallelConfig{.tp = 2, .pp = 1, .dp = 1}, 0);
  std::int64_t windowed = 0, full = 0;
  for (const Op& op : trace.ops) {
    if (op.name != "aten::_scaled_dot_product_flash_attention")
      continue;
    const Attribute* window = op.find_attribute("window_size");
    if (!window) {
      ++full;
      continue;
    }
    ++windowed;
    EXPECT_EQ(std::get<std::int64_t>(window->value), 32);
    const kernels::OpExpansion expansion = kernels::expand_op(op);
    ASSERT_EQ(expansion.kernels.size(), 1u);
    const auto& work = std::get<kernels::AttentionWork>(expansion.kernels.at(0).work);
    EXPECT_TRUE(work.windowed());
    // 1 x 4 heads, 128 queries of 32: 32 x 33 / 2 + 96 x 32 = 3600 pairs.
    EXPECT_DOUBLE_EQ(work.flops(), 4.0 * 4 * 3600 * 32);
  }
  EXPECT_EQ(windowed, 2 * kMicroBatches);
  EXPECT_EQ(full, 2 * kMicroBatches);
}

TEST(AttentionShapes, QkLayerNormIsOneNormPerQueryAndKeyEachWay) {
  TransformerConfig model = test_support::tiny_llama();
  const ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 1};
  const Trace plain = generate_llm_rank(model, parallel, 0);
  model.qk_layernorm = true;
  const Trace normed = generate_llm_rank(model, parallel, 0);
  EXPECT_EQ(count_ops(normed, "aten::native_layer_norm", "forward") -
                count_ops(plain, "aten::native_layer_norm", "forward"),
            2 * kLayers * kMicroBatches);
  EXPECT_EQ(count_ops(normed, "aten::native_layer_norm_backward", "backward") -
                count_ops(plain, "aten::native_layer_norm_backward", "backward"),
            2 * kLayers * kMicroBatches);
  // The query norm of the first layer: 4 local heads of 32 over 128 tokens, bf16 in and out,
  // and one fp32 inverse RMS per head row: reads 32768 bytes, writes 32768 + 512 x 4.
  const auto q_norm = std::find_if(normed.ops.begin(), normed.ops.end(), [](const Op& op) {
    return op.name == "aten::native_layer_norm" && op.outputs.size() == 2;
  });
  ASSERT_NE(q_norm, normed.ops.end());
  EXPECT_EQ(q_norm->outputs.at(0).shape, (std::vector<std::int64_t>{1, 4, 128, 32}));
  EXPECT_EQ(q_norm->outputs.at(1).shape, (std::vector<std::int64_t>{512}));
  const kernels::OpExpansion expansion = kernels::expand_op(*q_norm);
  ASSERT_EQ(expansion.kernels.size(), 1u);
  const auto& work = std::get<kernels::ElementwiseWork>(expansion.kernels.at(0).work);
  EXPECT_DOUBLE_EQ(work.bytes_read, 32768);
  EXPECT_DOUBLE_EQ(work.bytes_written, 32768 + 512 * 4);
}

TEST(AttentionShapes, ContextParallelismWithAWindowIsRejected) {
  TransformerConfig model = test_support::tiny_llama();
  model.window_size = 32;
  ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 1};
  parallel.cp = 2;
  try {
    validate(model, parallel);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("window_size"), std::string::npos) << error.what();
  }
  model.window_size = 0;
  EXPECT_NO_THROW(validate(model, parallel));
}

}  // namespace
}  // namespace perfsim::generators::llm
