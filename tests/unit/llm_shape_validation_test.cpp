// A model that reaches the LLM generator with a size that is not positive (built in code, from a
// run-table row, or from `memory --llm` flags: not parsed from a model file, whose reader has
// its own check) is an InputError naming the field, before anything divides by it.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "perfsim/error.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

struct BadField {
  std::string field;  // as the InputError names it
  std::function<void(TransformerConfig&, int)> set;
};

// Runs `validate(model, parallel)` and returns the error's location ("" when it accepted).
std::string rejected_field(const TransformerConfig& model, const ParallelConfig& parallel,
                           const std::string& expected_file) {
  try {
    validate(model, parallel);
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), expected_file) << error.what();
    return error.location();
  }
  return "";
}

void expect_each_rejected(const TransformerConfig& valid, const std::vector<BadField>& fields) {
  ASSERT_EQ(rejected_field(valid, ParallelConfig{}, ""), "") << "the baseline must pass";
  for (const BadField& bad : fields) {
    for (int value : {0, -1}) {
      TransformerConfig model = valid;
      bad.set(model, value);
      EXPECT_EQ(rejected_field(model, ParallelConfig{}, "<model " + valid.name + ">"), bad.field)
          << bad.field << " = " << value;
    }
  }
}

TEST(LlmShapeValidation, EveryNonPositiveLayerShapeIsRejectedByName) {
  expect_each_rejected(test_support::tiny_gpt(),
                       {{"layers", [](TransformerConfig& m, int v) { m.layers = v; }},
                        {"hidden", [](TransformerConfig& m, int v) { m.hidden = v; }},
                        {"heads", [](TransformerConfig& m, int v) { m.heads = v; }},
                        {"kv_heads", [](TransformerConfig& m, int v) { m.kv_heads = v; }},
                        {"ffn_hidden", [](TransformerConfig& m, int v) { m.ffn_hidden = v; }},
                        {"vocab", [](TransformerConfig& m, int v) { m.vocab = v; }},
                        {"seq_len", [](TransformerConfig& m, int v) { m.seq_len = v; }}});
}

TEST(LlmShapeValidation, NonPositiveBatchesAreRejectedByName) {
  expect_each_rejected(test_support::tiny_gpt(),
                       {{"micro_batch", [](TransformerConfig& m, int v) { m.micro_batch = v; }},
                        {"global_batch", [](TransformerConfig& m, int v) { m.global_batch = v; }}});
}

TEST(LlmShapeValidation, NonPositiveExpertShapesAreRejectedByName) {
  expect_each_rejected(
      test_support::tiny_moe(),
      {{"moe_ffn_hidden", [](TransformerConfig& m, int v) { m.moe.expert_ffn_hidden = v; }},
       {"moe_layer_freq", [](TransformerConfig& m, int v) { m.moe.layer_freq = v; }}});
  // Zero means "none" for these: only a negative count is an error.
  TransformerConfig moe = test_support::tiny_moe();
  moe.moe.shared_expert_ffn_hidden = -1;
  EXPECT_EQ(rejected_field(moe, ParallelConfig{}, "<model tiny-moe>"), "shared_expert_ffn_hidden");
  moe = test_support::tiny_moe();
  moe.moe.first_dense_layers = -1;
  EXPECT_EQ(rejected_field(moe, ParallelConfig{}, "<model tiny-moe>"), "first_k_dense");
  TransformerConfig dense = test_support::tiny_gpt();
  dense.moe.num_experts = -1;
  EXPECT_EQ(rejected_field(dense, ParallelConfig{}, "<model tiny-gpt>"), "num_experts");
}

// The error's message, "" when `validate(model, parallel)` accepted.
std::string rejection_message(const TransformerConfig& model, const ParallelConfig& parallel) {
  try {
    validate(model, parallel);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(LlmShapeValidation, NegativeCountsWhereZeroMeansNoneSayZeroIsAllowed) {
  // 0 is valid for these (a dense model, no shared experts, ETP = TP, the model's batch,
  // Megatron's bucket): a negative value must not be told to be positive.
  TransformerConfig dense = test_support::tiny_gpt();
  dense.moe.num_experts = -1;
  EXPECT_NE(rejection_message(dense, ParallelConfig{})
                .find("num_experts: must not be negative (0: a dense model), got -1"),
            std::string::npos)
      << rejection_message(dense, ParallelConfig{});
  TransformerConfig moe = test_support::tiny_moe();
  moe.moe.shared_expert_ffn_hidden = -1;
  EXPECT_NE(rejection_message(moe, ParallelConfig{}).find("must not be negative (0: no shared"),
            std::string::npos)
      << rejection_message(moe, ParallelConfig{});
  ParallelConfig etp;
  etp.etp = -1;
  ParallelConfig micro_batch;
  micro_batch.micro_batch = -2;
  ParallelConfig bucket;
  bucket.bucket_bytes = -1;
  for (const ParallelConfig& parallel : {etp, micro_batch, bucket}) {
    const std::string message = rejection_message(test_support::tiny_gpt(), parallel);
    EXPECT_NE(message.find("must not be negative (0: "), std::string::npos) << message;
  }
}

TEST(LlmShapeValidation, NegativeBatchOverridesAreRejectedByName) {
  ParallelConfig parallel;
  parallel.micro_batch = -2;
  EXPECT_EQ(rejected_field(test_support::tiny_gpt(), parallel, "<parallel>"), "micro_batch");
  parallel = ParallelConfig{};
  parallel.global_batch = -8;
  EXPECT_EQ(rejected_field(test_support::tiny_gpt(), parallel, "<parallel>"), "global_batch");
}

TEST(LlmShapeValidation, TheGeneratorRejectsAZeroSizeBeforeDividingByIt) {
  TransformerConfig model = test_support::tiny_gpt();
  model.heads = 0;  // head_dim() = hidden / heads
  try {
    generate_llm_rank(model, ParallelConfig{}, 0);
    FAIL() << "a model with 0 heads generated a trace";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "heads");
    EXPECT_NE(std::string(error.what()).find("must be positive, got 0"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace perfsim::generators::llm
