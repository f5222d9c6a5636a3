// Issue 16: scenario assembly (src/scenario) is a library without MPI. This executable links
// perfsim_scenario alone (tests/CMakeLists.txt: stems "scenario_*"), without MPI's include
// path or libraries, so a scenario file that includes mpi.h or an mpi_sim/mpi header, or calls
// MPI, breaks its build; the test then runs a whole folded LLM scenario in one process.
#include <gtest/gtest.h>

#include <string>

#include "io/input_file.hpp"
#include "scenario/folded_simulation.hpp"
#include "support/small_gpt.hpp"
#include "topology/topology.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

const std::string kSource = PERFSIM_SOURCE_DIR;

TEST(ScenarioWithoutMpi, FoldsAnLlmRunInOneProcess) {
  llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = 2;
  parallel.dp = 2;
  parallel.micro_batch = 1;
  parallel.global_batch = 8;
  const std::string device_file = kSource + "/configs/devices/A100-80GB.json";
  const LlmScenario scenario{
      test_support::small_gpt(4, 512, 8),
      parallel,
      topology::with_node_count(
          topology::load_topology(kSource + "/configs/topologies/dgx-a100.json"), 1),
      io::read_file_decompressed(device_file),
      device_file,
      ""};

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
