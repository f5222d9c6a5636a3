#pragma once
// The `perfsim simulate` options that repeat one of the plan's layouts: the plan's model,
// topology, device, precision, fusions and calibration with the layout's parallel settings and
// the switches the planner turned on for it (layout_enumerator.hpp), so that the chosen layout
// can be simulated (or traced, or profiled) on its own with every rank.
#include <string>

#include "generators/llm/llm_parallel_config.hpp"
#include "scenario/llm_simulate_options.hpp"
#include "scenario/topology_size.hpp"

namespace perfsim::cli {

// What `plan` was given besides the layout (its command-line values, as given).
struct PlanSimulateSetting {
  std::string model_path;     // a file or a name in configs/models
  std::string topology_path;  // a file or a name in configs/topologies
  scenario::TopologySize topology_size;
  std::string device;  // a file or a name in configs/devices
  std::string dtype;   // "": the model file's
  bool bias_swiglu_fusion = true;
  bool rope_fusion = true;
  bool cross_entropy_fusion = false;
  std::string cross_entropy_fusion_impl = "native";
  std::string assets;       // "": the shipped curves
  std::string calibration;  // "": the shipped one, "none", or a file
};

scenario::LlmSimulateOptions plan_layout_simulate_options(
    const PlanSimulateSetting& setting, const generators::llm::ParallelConfig& layout);

}  // namespace perfsim::cli
