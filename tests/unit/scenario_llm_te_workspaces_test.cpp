// Transformer Engine's cuBLAS workspaces (generators/llm/llm_te_workspace.hpp) reach every
// generated trace from the scenario that resolves the device (scenario::with_te_workspaces):
// `simulate --model`, the embedded default scenario, the planner's layouts, the rows of
// `validate runs` and `generate --device`. The memory closed form always counts them from the
// device's architecture; the allocator replay of a generated trace then holds exactly those
// bytes more.
#include <gtest/gtest.h>

#include <string>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_te_workspace.hpp"
#include "memory/device_memory.hpp"
#include "memory/llm_memory.hpp"
#include "memory/trace_memory.hpp"
#include "scenario/device_argument.hpp"
#include "scenario/llm_simulation.hpp"
#include "scenario/plan_simulation.hpp"
#include "scenario/run_validation.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

constexpr Bytes kMiB = 1024 * 1024;

// llama3-8b over 8 GPUs as `simulate --model` reads it: PP 4, 4 micro-batches.
LlmSimulateOptions llama3_8b_on(const std::string& device) {
  const std::string source = PERFSIM_SOURCE_DIR;
  LlmSimulateOptions options;
  options.model_path = source + "/configs/models/llama3-8b.json";
  options.pp = 4;
  options.dp = 2;
  options.global_batch = 8;
  options.topology_path = source + "/configs/topologies/hgx-h100.json";
  options.device_path = device;
  return options;
}

TEST(ScenarioTeWorkspaces, SimulateModelDeclaresTheDevicesWorkspaces) {
  for (const auto& [device, expected] :
       {std::pair<std::string, Bytes>{"H100-SXM", 32 * kMiB}, {"A100-80GB", 4 * kMiB}}) {
    SCOPED_TRACE(device);
    const LlmScenario scenario = read_llm_scenario(llama3_8b_on(device));
    EXPECT_EQ(scenario.parallel.cublas_workspace_bytes, expected);
    // The replay of stage 0's generated trace holds exactly the closed form's workspace bytes
    // more than the same trace without them (other scratch buffers count as workspace too).
    const memory::DeviceMemory memory = memory::device_memory_of(read_device_argument(device));
    const memory::StageMemory closed =
        memory::estimate_llm_memory(scenario.model, scenario.parallel, memory).stages.at(0);
    llm::ParallelConfig without = scenario.parallel;
    without.cublas_workspace_bytes = 0;
    auto replayed_workspace = [&](const llm::ParallelConfig& parallel) {
      return memory::trace_memory_report(
                 llm::generate_llm_stage_template(scenario.model, parallel, 0).trace, memory)
          .live_at_peak[memory::MemoryCategory::kWorkspace];
    };
    EXPECT_EQ(closed.workspace_bytes, expected);
    EXPECT_EQ(replayed_workspace(scenario.parallel) - replayed_workspace(without),
              closed.workspace_bytes);
  }
}

TEST(ScenarioTeWorkspaces, TheDefaultScenarioDeclaresHopperWorkspaces) {
  // `perfsim` with no arguments: Llama 3 70B on H100 (hopper: 32 MiB, no userbuffers, dense).
  const LlmScenario scenario = read_llm_scenario(embedded_default_llm_options());
  EXPECT_EQ(scenario.parallel.cublas_workspace_bytes, llm::kTeCublasWorkspaceHopperBytes);
}

TEST(ScenarioTeWorkspaces, EveryPlannedLayoutDeclaresThem) {
  PlanRequest request;
  request.device_memory =
      memory::device_memory_of(read_device_argument("A100-80GB"));  // ampere: 4 MiB
  llm::ParallelConfig parallel;
  parallel.tp = 2;
  EXPECT_EQ(layout_scenario(request, parallel).parallel.cublas_workspace_bytes, 4 * kMiB);
  EXPECT_EQ(layout_scenario(request, parallel).parallel.tp, 2);
}

TEST(ScenarioTeWorkspaces, EveryRunTableRowDeclaresItsDevicesWorkspaces) {
  // `perfsim validate runs`: each row's device.
  const validation::RunTable table = validation::parse_run_table(
      "name,model,gpus,tp,pp,dp,micro_batch,global_batch,device,topology,measured_iteration_s\n"
      "a100,llama3-8b,8,2,2,2,1,16,A100-80GB,dgx-a100,1\n"
      "h100,llama3-8b,8,2,2,2,1,16,H100-SXM,hgx-h100,1\n",
      "runs.csv");
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(scenario_of_run(table.rows[0], table.source).parallel.cublas_workspace_bytes, 4 * kMiB);
  EXPECT_EQ(scenario_of_run(table.rows[1], table.source).parallel.cublas_workspace_bytes,
            32 * kMiB);
}

TEST(ScenarioTeWorkspaces, GenerateDeclaresThemOnlyWithADevice) {
  LlmSimulateOptions options = llama3_8b_on("H100-SXM");
  EXPECT_EQ(read_llm_workload(options).parallel.cublas_workspace_bytes, 32 * kMiB);
  options.device_path.clear();  // `generate --model` without --device: not modelled
  EXPECT_EQ(read_llm_workload(options).parallel.cublas_workspace_bytes, 0);
}

}  // namespace
}  // namespace perfsim::scenario
