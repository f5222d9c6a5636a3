// A run-table row without a pipeline split whose layers do not divide over PP x V: the split the
// large-model recipes use where it divides, else the loss counted, else an even spread; and a
// row whose layers divide, or that gives its own split, keeps it.
#include <gtest/gtest.h>

#include <numeric>
#include <optional>
#include <vector>

#include "scenario/inferred_pipeline_split.hpp"
#include "scenario/run_validation.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

TEST(InferredPipelineSplit, LayersThatDivideNeedNoAssumption) {
  EXPECT_FALSE(infer_pipeline_split(80, 8, 5).has_value());  // Llama 3 70B, PP 8 x V 5
  EXPECT_FALSE(infer_pipeline_split(7, 1, 1).has_value());   // no pipeline
}

TEST(InferredPipelineSplit, EmbeddingAndLossCountedWhereThatDivides) {
  // Llama 3.1 405B: 126 + 2 = 128 over PP 8 x V 8 (Megatron-Bridge), and over PP 16 (the
  // Llama 3 paper's first and last stages one layer short).
  for (const auto& [pp, v] : {std::pair{8, 8}, std::pair{16, 1}}) {
    const std::optional<InferredPipelineSplit> split = infer_pipeline_split(126, pp, v);
    ASSERT_TRUE(split.has_value());
    EXPECT_TRUE(split->account_for_embedding);
    EXPECT_TRUE(split->account_for_loss);
    EXPECT_TRUE(split->virtual_stage_layers.empty());
  }
}

TEST(InferredPipelineSplit, TheLossAloneWhereOnlyOneMoreLayerDivides) {
  const std::optional<InferredPipelineSplit> split = infer_pipeline_split(95, 4, 1);
  ASSERT_TRUE(split.has_value());  // DeepSeek LLM 67B: 95 + 1 = 96 over PP 4
  EXPECT_FALSE(split->account_for_embedding);
  EXPECT_TRUE(split->account_for_loss);
}

TEST(InferredPipelineSplit, OtherwiseAnEvenSpreadWithTheExtraLayersAfterTheFirstStage) {
  const std::optional<InferredPipelineSplit> split = infer_pipeline_split(29, 4, 1);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->virtual_stage_layers,
            (std::vector<int>{7, 8, 7, 7}));  // 29 + 1, + 2 do not divide
  const std::optional<InferredPipelineSplit> chunks = infer_pipeline_split(61, 4, 2);
  ASSERT_TRUE(chunks.has_value());  // 8 virtual stages: 61 = 8 x 7 + 5
  EXPECT_EQ(
      std::accumulate(chunks->virtual_stage_layers.begin(), chunks->virtual_stage_layers.end(), 0),
      61);
  EXPECT_EQ(chunks->virtual_stage_layers.front(), 7);
  EXPECT_EQ(chunks->virtual_stage_layers.back(), 7);
}

validation::RunTable table_of(const std::string& split_cells) {
  return validation::parse_run_table(
      "name,model,seq_len,gpus,tp,pp,dp,virtual_stages,micro_batch,global_batch,"
      "account_for_embedding,account_for_loss,device,topology,measured_iteration_s\n"
      "r,llama3-405b,8192,64,8,8,1,8,1,16," +
          split_cells + ",H100-SXM,hgx-h100-8node,1\n",
      "runs.csv");
}

TEST(InferredPipelineSplit, ARowWithoutASplitTakesTheAssumedOneAndSaysSo) {
  const validation::RunTable table = table_of(",");
  const LlmSimulateOptions options =
      simulate_options_of_run(table.rows.front(), "runs.csv", "", "none");
  EXPECT_TRUE(options.account_for_embedding);
  EXPECT_TRUE(options.account_for_loss);
  // The row's own split is kept, even where it does not divide (then the row's error says so).
  const validation::RunTable own = table_of("1,0");
  const LlmSimulateOptions kept = simulate_options_of_run(own.rows.front(), "runs.csv", "", "none");
  EXPECT_TRUE(kept.account_for_embedding);
  EXPECT_FALSE(kept.account_for_loss);
}

}  // namespace
}  // namespace perfsim::scenario
