// Absurd model sizes are rejected before generation, naming the field (issue 20: a model file
// with 2147483647 layers used to generate until killed).
#include <gtest/gtest.h>

#include <string>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

std::string model_json(const std::string& layers, const std::string& global_batch) {
  return R"({"schema":"perfsim-llm-model/1","name":"m","source":"test","layers":)" + layers +
         R"(,"hidden":1024,"heads":16,"ffn_hidden":4096,"vocab":50257,"seq_len":1024,)" +
         R"("micro_batch":1,"global_batch":)" + global_batch + "}";
}

TEST(LlmSizeLimits, AbsurdLayerCountIsAnErrorNamingTheField) {
  try {
    parse_transformer_config(model_json("2147483647", "8"), "huge.json");
    FAIL() << "2147483647 layers accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "huge.json");
    EXPECT_EQ(error.location(), "layers");
  }
}

TEST(LlmSizeLimits, TooManyOpsPerRankIsAnErrorWithTheEstimate) {
  const TransformerConfig model =
      parse_transformer_config(model_json("96000", "100000000"), "big.json");  // each in range
  ParallelConfig parallel;
  try {
    validate(model, parallel);
    FAIL() << "a run of 1e15 ops accepted";
  } catch (const InputError& error) {
    EXPECT_NE(error.problem().find("ops per simulated rank"), std::string::npos);
  }
  // A real large layout passes: GPT-3 175B shapes, PP 16, 192 micro-batches per pipeline.
  const TransformerConfig gpt3 = parse_transformer_config(model_json("96", "1536"), "gpt3.json");
  ParallelConfig published;
  published.tp = 8;
  published.pp = 16;
  published.dp = 8;
  EXPECT_NO_THROW(validate(gpt3, published));
}

}  // namespace
}  // namespace perfsim::generators::llm
