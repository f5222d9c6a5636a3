#pragma once
// What every generated workload (LLM, DLRM) is priced with: the analytical kernel models of
// one device and the collective model of one topology, with fitted curves when an asset is
// given, else the shipped fitted curves when they cover the topology
// (assets/default_collective_curves.hpp), else nominal ones from link bandwidths. Fills the inputs'
// duration sources and the two notes that say which models were used.
#include <functional>
#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "perfsim/comm.hpp"
#include "scenario/simulation_inputs.hpp"
#include "topology/topology.hpp"

namespace perfsim::scenario {

struct GeneratedWorkloadModels {
  const topology::Topology& topology;
  const std::string& device_json;
  const std::string& device_source;
  const std::string& assets_path;    // "" = shipped fitted curves where they cover, else nominal
  std::vector<ProcessGroup> groups;  // the groups the collective model must route
  std::string host_overheads = "none";
  // The end-to-end calibration's GEMM time scale for the device (1 = the models alone).
  std::function<double(const devices::DeviceSpec&)> gemm_time_scale;
};

// Returns the device the kernel models use (for peak FLOP/s and memory).
devices::DeviceSpec attach_generated_workload_models(SimulationInputs& inputs,
                                                     GeneratedWorkloadModels models);

}  // namespace perfsim::scenario
