// RUNS.csv `timer_syncs` (Megatron-LM 2020-2022's synchronizing forward/backward timers)
// reaches the simulated layout; an empty cell or a missing column keeps Megatron-Core's
// default (no syncs), and a cell that is not 0/1 is the row's error.
#include <gtest/gtest.h>

#include <string>

#include "scenario/run_validation.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

TEST(RunTimerSyncsColumn, FollowsTheCell) {
  const validation::RunTable table = validation::parse_run_table(
      "name,model,gpus,tp,pp,dp,micro_batch,global_batch,device,topology,timer_syncs,"
      "measured_iteration_s\n"
      "on,llama3-8b,16,2,2,4,1,16,A100-80GB,dgx-a100,1,1\n"
      "off,llama3-8b,16,2,2,4,1,16,A100-80GB,dgx-a100,0,1\n"
      "default,llama3-8b,16,2,2,4,1,16,A100-80GB,dgx-a100,,1\n"
      "bad,llama3-8b,16,2,2,4,1,16,A100-80GB,dgx-a100,2,1\n",
      "runs.csv");
  ASSERT_EQ(table.rows.size(), 4u);
  EXPECT_TRUE(scenario_of_run(table.rows[0], table.source).parallel.timer_syncs);
  EXPECT_FALSE(scenario_of_run(table.rows[1], table.source).parallel.timer_syncs);
  EXPECT_FALSE(scenario_of_run(table.rows[2], table.source).parallel.timer_syncs);
  EXPECT_NE(table.rows[3].error.find("timer_syncs"), std::string::npos) << table.rows[3].error;

  const validation::RunTable without_column = validation::parse_run_table(
      "name,model,gpus,tp,pp,dp,micro_batch,global_batch,device,topology,measured_iteration_s\n"
      "plain,llama3-8b,16,2,2,4,1,16,A100-80GB,dgx-a100,1\n",
      "runs.csv");
  EXPECT_FALSE(
      scenario_of_run(without_column.rows.at(0), without_column.source).parallel.timer_syncs);
}

}  // namespace
}  // namespace perfsim::scenario
