#pragma once
// The LLM branch of `perfsim simulate`: options, inputs (generated traces priced by the kernel
// models and the collective model); the report's LLM figures are in llm_report.hpp.
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "scenario/llm_simulate_options.hpp"
#include "scenario/simulation_inputs.hpp"
#include "topology/topology.hpp"
#include "validation/end_to_end_calibration.hpp"

namespace perfsim::scenario {

// The options of the embedded default scenario (`perfsim` with no arguments): Llama 3 70B on
// 8 x 8 H100, TP 8, PP 4, DP 2, SP, ZeRO-1; everything read from text in the binary.
LlmSimulateOptions embedded_default_llm_options();

// The parallel layout the LLM options describe (not yet validated against a model).
generators::llm::ParallelConfig parallel_config_from(const LlmSimulateOptions& options);

// `parallel` on a device of `architecture` (its device file's): Transformer Engine's cuBLAS
// workspaces for it (generators/llm/llm_te_workspace.hpp), which every trace generated with
// this layout then declares, as the memory closed form counts them; "" (no device): none.
// Every scenario that resolves a device sets them here (read_llm_scenario, the planner's and
// the run table's layouts, read_llm_workload); memory only, iteration times do not change.
generators::llm::ParallelConfig with_te_workspaces(generators::llm::ParallelConfig parallel,
                                                   std::string_view architecture);

// `parallel` with the device's sustained GEMM rate in `model`'s activation dtype
// (ParallelConfig::gemm_TFLOPs: which ops of a combined 1F1B step run beside an all-to-all).
generators::llm::ParallelConfig with_compute_rate(generators::llm::ParallelConfig parallel,
                                                  const generators::llm::TransformerConfig& model,
                                                  const devices::DeviceSpec& device);

// What `perfsim generate --model` writes traces of: the model file (with --dtype) and the
// options' layout, with the workspaces of --device when one is given; validated.
struct LlmWorkload {
  generators::llm::TransformerConfig model;
  generators::llm::ParallelConfig parallel;
};
LlmWorkload read_llm_workload(const LlmSimulateOptions& options);

// Everything the LLM branch needs, already read: the default scenario builds one from embedded
// text, the command line from files.
struct LlmScenario {
  generators::llm::TransformerConfig model;
  generators::llm::ParallelConfig parallel;
  topology::Topology topology;
  std::string device_json;
  std::string device_source;
  std::string assets_path;  // "" = shipped fitted curves where they cover, else nominal
  // Applied to the generated programs (host costs, GEMM time scale); empty fitted_on = none.
  validation::EndToEndCalibration calibration{};
  // Concurrent collectives share the links they use (mpi_sim/engine/link_occupancy.hpp).
  bool link_sharing = true;
};

LlmScenario read_llm_scenario(const LlmSimulateOptions& options);

// What one simulated iteration gives, as the report and the planner use it.
struct LlmRunSummary {
  double iteration_us = 0;  // the slowest rank
  double model_flops = 0;
  double mfu = 0;
  // By group kind ("tensor parallel", "data parallel", "pipeline (p2p)"): mean per rank of the
  // communication time and of the part of it compute waited for (for p2p that includes the
  // pipeline bubble).
  std::map<std::string, double> comm_us_by_kind;
  std::map<std::string, double> exposed_us_by_kind;
  // The pipeline bubble: the part of the exposed p2p time before the transfer started (the
  // neighbouring stage had not reached its send/receive), mean and max over ranks. The rest
  // of the exposed p2p time is the transfer itself.
  double bubble_mean_us = 0;
  double bubble_max_us = 0;
};

LlmRunSummary summarize_llm_run(const generators::llm::TransformerConfig& model,
                                const generators::llm::ParallelConfig& parallel,
                                double peak_flops_per_s, std::span<const RankResult> results);

// "TP 8 x PP 8 x DP 1 (3 chunks per stage), micro-batch 1, sequence parallel on, recompute
// selective, ZeRO 0".
std::string describe_layout(const generators::llm::ParallelConfig& parallel);

SimulationInputs load_llm_inputs(const LlmScenario& scenario, const std::vector<int>& local_ranks);
// Programs built from `inputs`' duration sources share their ranks' links when the scenario
// says so (load_llm_inputs does this for its own programs).
void share_links_if_asked(const LlmScenario& scenario, const SimulationInputs& inputs,
                          std::span<engine::RankProgram> programs);

}  // namespace perfsim::scenario
