// Every model file shipped in configs/models loads through the model reader (the path `simulate
// --model NAME` and RUNS.csv's `model` column take), is named after its file, and says where its
// shapes come from. The files whose sources publish a parameter count are checked against it:
// a mistyped hidden size, expert width or layer count moves the total by far more than the
// rounding of the published figure (tolerance 2%: "314B", "141B", "7.3B" are rounded).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "generators/llm/llm_model_config.hpp"

namespace perfsim::generators::llm {
namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(PERFSIM_SOURCE_DIR) / "configs/models";

// Weights of one attention block (norms and biases left out: < 0.1% of any model here).
double attention_parameters(const TransformerConfig& model) {
  const double h = model.hidden;
  const double heads = model.heads;
  if (model.is_mla()) {
    const MultiLatentAttention& mla = model.mla;
    const double q = mla.q_lora_rank > 0
                         ? h * mla.q_lora_rank + double(mla.q_lora_rank) * heads * mla.q_head_dim()
                         : h * heads * mla.q_head_dim();
    const double kv = h * (mla.kv_lora_rank + mla.qk_rope_head_dim) +
                      double(mla.kv_lora_rank) * heads * (mla.qk_nope_head_dim + mla.v_head_dim);
    return q + kv + heads * mla.v_head_dim * h;
  }
  const double width = model.head_dim();
  return 2 * h * heads * width + 2 * h * model.kv_heads * width;
}

struct Parameters {
  double total = 0;
  double active = 0;  // per token: top_k routed experts and the shared ones
};

// The input embedding and the output layer: one matrix when tied (tied_embeddings), two when
// not; learned position embeddings (GPT-3) add seq_len x hidden.
Parameters count_parameters(const TransformerConfig& model) {
  const double h = model.hidden;
  const double branches = model.gated_ffn ? 3 : 2;
  Parameters count;
  count.total = count.active = (model.tied_embeddings ? 1.0 : 2.0) * model.vocab * h +
                               (model.rope() ? 0.0 : static_cast<double>(model.seq_len) * h);
  for (int layer = 0; layer < model.layers; ++layer) {
    const double attention = attention_parameters(model);
    if (!model.is_moe_layer(layer)) {
      count.total += attention + branches * h * model.ffn_hidden;
      count.active += attention + branches * h * model.ffn_hidden;
      continue;
    }
    const MixtureOfExperts& moe = model.moe;
    const double expert = branches * h * moe.expert_ffn_hidden;
    const double shared = branches * h * moe.shared_expert_ffn_hidden;
    count.total += attention + moe.num_experts * expert + shared + h * moe.num_experts;
    count.active += attention + moe.top_k * expert + shared + h * moe.num_experts;
  }
  return count;
}

TEST(ShippedModels, EveryFileLoadsAndIsNamedAfterItsFile) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(kModels)) {
    if (entry.path().extension() != ".json")
      continue;
    SCOPED_TRACE(entry.path().string());
    const TransformerConfig model = load_transformer_config(entry.path().string());
    EXPECT_EQ(model.name, entry.path().stem().string());
    EXPECT_FALSE(model.source.empty());
    ++files;
  }
  EXPECT_GE(files, 25);
}

// Published totals (and active counts of MoE models) in billions, as each file's source states
// them.
struct Published {
  double total_b;
  double active_b;  // 0: dense, or not published
};

TEST(ShippedModels, ParameterCountsMatchTheirSources) {
  const std::map<std::string, Published> published = {
      {"grok-1", {314, 0}},            // xai-org/grok-1 model card: 314B
      {"mixtral-8x22b", {141, 39}},    // Mistral AI: 39B active of 141B
      {"mixtral-8x7b", {46.7, 12.9}},  // Jiang et al. 2024: 47B total, 13B active (HF card)
      {"deepseek-v2", {236, 21}},      // DeepSeek-V2 abstract: 236B total, 21B activated
      {"deepseek-v3", {671, 37}},      // DeepSeek-V3 report: 671B total, 37B activated
      {"qwen2-57b-a14b", {57, 14}},    // Qwen2 report Table 1
      {"mistral-7b", {7.3, 0}},        // Jiang et al. 2023: 7.3B
      {"llama2-13b", {13, 0}},         // Touvron et al. 2023
      {"nemotron-4-15b", {15.7, 0}},   // Parmar et al. 2024: 3.2B embedding + 12.5B others
      {"nemotron-4-340b", {340, 0}},   // Nemotron-4 340B report
      // Meta's Llama 4 model cards: 17B active of 109B / 400B total, rounded and with the vision
      // encoder, which the text-only files leave out (107.8B and 400.7B counted here).
      {"llama4-scout", {109, 17}},
      {"llama4-maverick", {400, 17}},
      // OpenAI's gpt-oss model card: 20.9B total. Its 3.6B active is count_parameters' 4.19B less
      // the input embedding (0.58B), a different convention, so only the total is checked.
      {"gpt-oss-20b", {20.9, 0}},
      {"qwen3-8b", {8.2, 0}},         // Qwen3-8B model card: 8.2B
      {"qwen3-14b", {14.8, 0}},       // Qwen3-14B model card: 14.8B
      {"qwen3-32b", {32.8, 0}},       // Qwen3-32B model card: 32.8B
      {"qwen2.5-72b", {72.7, 0}},     // Qwen2.5-72B model card: 72.7B
      {"kimi-k2", {1040, 32.6}},      // Kimi K2 report (arXiv:2507.20534) Table 2: 1.04T, 32.6B
      {"qwen2.5-7b", {7.61, 0}},      // Qwen2.5-7B model card: 7.61B
      {"qwen2.5-14b", {14.7, 0}},     // Qwen2.5-14B model card: 14.7B
      {"qwen2.5-32b", {32.5, 0}},     // Qwen2.5-32B model card: 32.5B
      {"codellama-34b", {34, 0}},     // Roziere et al. 2023: 34B
      {"deepseek-llm-67b", {67, 0}},  // DeepSeek LLM: 67B
      // Brown et al. 2020 Table 2.1, which counts one tied embedding matrix (tied_embeddings):
      // 125M, 350M, 760M, 2.7B, 6.7B, 13.0B and 175.0B. GPT-3 XL is left out: its table row's
      // 24 heads of 128 (3072 wide attention over d_model 2048, as the file has them) make
      // 1.52B, not the 1.3B of the same row.
      {"gpt3-125m", {0.125, 0}},
      {"gpt3-350m", {0.350, 0}},
      {"gpt3-760m", {0.760, 0}},
      {"gpt3-2.7b", {2.7, 0}},
      {"gpt3-6.7b", {6.7, 0}},
      {"gpt3-13b", {13.0, 0}},
      {"gpt3-175b", {175.0, 0}},
  };
  for (const auto& [name, figures] : published) {
    SCOPED_TRACE(name);
    const Parameters count =
        count_parameters(load_transformer_config((kModels / (name + ".json")).string()));
    EXPECT_NEAR(count.total / 1e9, figures.total_b, 0.02 * figures.total_b);
    if (figures.active_b > 0) {
      EXPECT_NEAR(count.active / 1e9, figures.active_b, 0.02 * figures.active_b);
    }
  }
}

}  // namespace
}  // namespace perfsim::generators::llm
