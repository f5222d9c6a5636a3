// RUNS.csv rows of today's open models (issue 15): rows naming the Qwen3 and GPT-OSS model
// files reach the simulated model with their head_dim, QK norm and sliding window; the
// `head_dim` column gives inline shapes a head width apart from hidden / heads; an expert
// layout with ETP below TP tiles TP x DP x CP ranks (Megatron-Bridge's Qwen3 235B-A22B on H100:
// TP 2, DP 16, EP 32, ETP 1), as the simulator's own check says.
#include <gtest/gtest.h>

#include <string>

#include "scenario/run_validation.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

const std::string kHeader =
    "name,model,layers,hidden,heads,kv_heads,head_dim,vocab,seq_len,gpus,tp,pp,dp,ep,etp,"
    "micro_batch,global_batch,sequence_parallel,device,topology,virtual_stages,"
    "account_for_embedding,account_for_loss,measured_iteration_s\n";

validation::RunTable table_of(const std::string& rows) {
  return validation::parse_run_table(kHeader + rows, "runs.csv");
}

TEST(RunAttentionShapes, ModelFilesBringTheirAttentionShapes) {
  const validation::RunTable table = table_of(
      "qwen,qwen3-235b-a22b,,,,,,,,256,2,8,16,32,1,1,8192,1,H100-SXM,hgx-h100-8node,4,1,1,1\n"
      "oss,gpt-oss-120b,,,,,,,,64,1,4,16,8,,1,1280,0,H100-SXM,hgx-h100-8node,,,,1\n");
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].error, "");
  EXPECT_EQ(table.rows[1].error, "");
  const LlmScenario qwen = scenario_of_run(table.rows[0], table.source);
  EXPECT_EQ(qwen.model.head_dim(), 128);
  EXPECT_EQ(qwen.model.query_width(), 8192);
  EXPECT_TRUE(qwen.model.qk_layernorm);
  EXPECT_EQ(qwen.parallel.expert_gradient_group_size(), 1);  // 2 x 16 / (1 x 32)
  const LlmScenario oss = scenario_of_run(table.rows[1], table.source);
  EXPECT_EQ(oss.model.head_dim(), 64);
  EXPECT_EQ(oss.model.window_size, 128);
  EXPECT_TRUE(oss.model.windowed_layer(0));
  EXPECT_FALSE(oss.model.windowed_layer(1));
}

TEST(RunAttentionShapes, HeadDimColumnSetsInlineShapes) {
  const validation::RunTable table = table_of(
      "inline,,4,3000,64,8,64,1024,256,8,1,1,8,,,1,8,0,H100-SXM,hgx-h100,,,,1\n"
      "zero,,4,3000,64,8,0,1024,256,8,1,1,8,,,1,8,0,H100-SXM,hgx-h100,,,,1\n");
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].head_dim, 64);
  const LlmScenario inline_row = scenario_of_run(table.rows[0], table.source);
  EXPECT_EQ(inline_row.model.head_dim(), 64);
  EXPECT_EQ(inline_row.model.query_width(), 4096);
  EXPECT_NE(table.rows[1].error.find("head_dim"), std::string::npos) << table.rows[1].error;
}

TEST(RunAttentionShapes, ExpertLayoutMustTileTheExpertMesh) {
  // ETP = TP stated: EP ranks of DP x CP (32 does not divide 16); ETP 1: EP 32 x ETP 1 of TP 2 x
  // DP 16. An empty etp cell is ETP 1 there, the only size that layout can have run with.
  const validation::RunTable table = table_of(
      "etp-tp,qwen3-235b-a22b,,,,,,,,256,2,8,16,32,2,1,8192,1,H100-SXM,hgx-h100-8node,4,1,1,1\n"
      "etp1,qwen3-235b-a22b,,,,,,,,256,2,8,16,32,1,1,8192,1,H100-SXM,hgx-h100-8node,4,1,1,1\n"
      "empty,qwen3-235b-a22b,,,,,,,,256,2,8,16,32,,1,8192,1,H100-SXM,hgx-h100-8node,4,1,1,1\n");
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_NE(table.rows[0].error.find("ep 32"), std::string::npos) << table.rows[0].error;
  EXPECT_EQ(table.rows[1].error, "");
  ASSERT_EQ(table.rows[2].error, "");
  EXPECT_EQ(simulate_options_of_run(table.rows[2], "runs.csv", "", "none").etp, 1);
}

}  // namespace
}  // namespace perfsim::scenario
