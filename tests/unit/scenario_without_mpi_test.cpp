// Issue 16: scenario assembly (src/scenario) is a library without MPI. This executable links
// perfsim_scenario alone (tests/CMakeLists.txt: stems "scenario_*"), without MPI's include
// path or libraries, so a scenario file that includes mpi.h or an mpi_sim/mpi header, or calls
// MPI, breaks its build; the test then runs a whole folded LLM scenario in one process.
#include <gtest/gtest.h>

#include <string>

#include "scenario/folded_simulation.hpp"
#include "support/dgx_a100_scenario.hpp"
#include "support/small_gpt.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

TEST(ScenarioWithoutMpi, FoldsAnLlmRunInOneProcess) {
  llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = 2;
  parallel.dp = 2;
  parallel.micro_batch = 1;
  parallel.global_batch = 8;
  const LlmScenario scenario =
      test_support::dgx_a100_scenario(test_support::small_gpt(4, 512, 8), parallel, 1);

  const FoldedRun run = fold_in_process(scenario, false);

  ASSERT_FALSE(run.refusal.has_value()) << *run.refusal;
  EXPECT_EQ(run.representatives, 2u);  // one per pipeline stage
  ASSERT_EQ(run.results.size(), 8u);
  for (std::size_t rank = 0; rank < run.results.size(); ++rank) {
    EXPECT_EQ(run.results[rank].sim_rank, static_cast<int>(rank));
    EXPECT_GT(run.results[rank].iteration_us, 0.0);
  }
}

}  // namespace
}  // namespace perfsim::scenario
