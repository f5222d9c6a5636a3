// RUNS.csv layout columns that reach the simulated layout (scenario_of_run): `etp`, the expert
// tensor parallel size of MoE runs (empty: TP, Megatron's default), and `p2p_scatter_gather`,
// Megatron-LM's stage-boundary scatter/gather (empty: perfsim's default, off).
#include <gtest/gtest.h>

#include <string>

#include "perfsim/error.hpp"
#include "scenario/run_validation.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

const std::string kHeader =
    "name,model,gpus,tp,pp,dp,ep,etp,micro_batch,global_batch,device,topology,"
    "p2p_scatter_gather,sequence_parallel,measured_iteration_s\n";

validation::RunTable table_of(const std::string& rows) {
  return validation::parse_run_table(kHeader + rows, "runs.csv");
}

TEST(RunLayoutColumns, ExpertTensorParallelSizeDefaultsToTp) {
  const validation::RunTable table = table_of(
      "etp1,mixtral-8x7b,64,2,4,8,8,1,1,256,H100-SXM,hgx-h100,,1,1\n"
      "default,mixtral-8x7b,64,2,4,8,8,,1,256,H100-SXM,hgx-h100,,1,1\n"
      "bad,mixtral-8x7b,64,2,4,8,8,0,1,256,H100-SXM,hgx-h100,,1,1\n");
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_EQ(table.rows[0].etp, 1);
  EXPECT_EQ(table.rows[1].etp, 0);
  EXPECT_NE(table.rows[2].error.find("etp"), std::string::npos) << table.rows[2].error;

  const LlmScenario with_etp = scenario_of_run(table.rows[0], table.source);
  EXPECT_EQ(with_etp.parallel.etp, 1);
  EXPECT_EQ(with_etp.parallel.expert_tp(), 1);
  // Expert-DP = TP x CP x DP / (ETP x EP) = 2 x 8 / 8 = 2 with ETP 1, 1 with ETP = TP.
  EXPECT_EQ(with_etp.parallel.expert_gradient_group_size(), 2);
  const LlmScenario by_default = scenario_of_run(table.rows[1], table.source);
  EXPECT_EQ(by_default.parallel.expert_tp(), 2);
  EXPECT_EQ(by_default.parallel.expert_gradient_group_size(), 1);
}

TEST(RunLayoutColumns, ExpertTensorParallelSizeTheLayoutCannotTakeIsRejected) {
  // ETP 4 x EP 8 = 32 does not divide TP x DP = 16.
  const validation::RunTable table =
      table_of("etp4,mixtral-8x7b,64,2,4,8,8,4,1,256,H100-SXM,hgx-h100,,1,1\n");
  ASSERT_TRUE(table.rows[0].error.empty()) << table.rows[0].error;
  try {
    scenario_of_run(table.rows[0], table.source);
    ADD_FAILURE() << "ETP 4 x EP 8 was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("etp"), std::string::npos) << error.what();
  }
}

TEST(RunLayoutColumns, P2pScatterGatherFollowsTheCell) {
  const validation::RunTable table = table_of(
      "on,llama3-8b,16,2,2,4,1,,1,16,A100-80GB,dgx-a100,1,1,1\n"
      "off,llama3-8b,16,2,2,4,1,,1,16,A100-80GB,dgx-a100,0,1,1\n"
      "default,llama3-8b,16,2,2,4,1,,1,16,A100-80GB,dgx-a100,,1,1\n");
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_TRUE(scenario_of_run(table.rows[0], table.source).parallel.p2p_scatter_gather);
  EXPECT_FALSE(scenario_of_run(table.rows[1], table.source).parallel.p2p_scatter_gather);
  EXPECT_FALSE(scenario_of_run(table.rows[2], table.source).parallel.p2p_scatter_gather);
}

}  // namespace
}  // namespace perfsim::scenario
