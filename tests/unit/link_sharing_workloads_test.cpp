// Which workloads share links (issue 17): generated DLRM runs and traces priced by the
// collective model carry the topology's sharing rule unless --link-sharing off; traces replayed
// with measured collective durations never do (those durations hold the sharing the profiled
// run saw).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario/dlrm_simulation.hpp"
#include "scenario/simulation_inputs.hpp"

namespace perfsim::scenario {
namespace {

const std::string kSource = PERFSIM_SOURCE_DIR;
const std::string kTraces = std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-dlrm-8xV100/";

bool every_program_shares(const SimulationInputs& inputs) {
  for (const engine::RankProgram& program : inputs.programs) {
    if (!program.link_sharing)
      return false;
  }
  return !inputs.programs.empty();
}

bool no_program_shares(const SimulationInputs& inputs) {
  for (const engine::RankProgram& program : inputs.programs) {
    if (program.link_sharing)
      return false;
  }
  return !inputs.programs.empty();
}

SimulateOptions generated_dlrm(bool link_sharing) {
  SimulateOptions options;
  options.dlrm.config_path = kSource + "/configs/dlrm/dlrm-small-4gpu.json";
  options.llm.topology_path = kSource + "/configs/topologies/4xa100.json";
  options.llm.device_path = kSource + "/configs/devices/A100-40GB.json";
  options.llm.link_sharing = link_sharing;
  return options;
}

TEST(LinkSharingWorkloads, GeneratedDlrmSharesUnlessTurnedOff) {
  EXPECT_TRUE(every_program_shares(load_simulation_inputs(generated_dlrm(true), 4, {0, 1, 2, 3})));
  EXPECT_TRUE(no_program_shares(load_simulation_inputs(generated_dlrm(false), 4, {0, 1, 2, 3})));
}

TEST(LinkSharingWorkloads, TracesShareOnlyWithModelledCollectives) {
  SimulateOptions options;
  options.kineto_specs = {kTraces + "dlrm_kineto.tar.gz"};
  const std::vector<int> ranks{0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_TRUE(no_program_shares(load_simulation_inputs(options, 8, ranks)));  // measured
  options.comm_durations = "model";
  options.llm.topology_path = kSource + "/configs/topologies/dgx1-v100.json";
  EXPECT_TRUE(every_program_shares(load_simulation_inputs(options, 8, ranks)));
  options.llm.link_sharing = false;
  EXPECT_TRUE(no_program_shares(load_simulation_inputs(options, 8, ranks)));
}

}  // namespace
}  // namespace perfsim::scenario
