#pragma once
// The cluster most simulation tests run on: DGX-A100 nodes (8 A100-80GB GPUs each) with the
// shipped device file and no fitted assets, so a test states only the model, the layout and
// the node count. The layout gets the device's Transformer Engine workspaces as the product's
// scenarios do (scenario::with_te_workspaces), so a test simulates what `perfsim` would.
#include <string>
#include <utility>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_model_config.hpp"
#include "io/input_file.hpp"
#include "scenario/llm_simulation.hpp"
#include "topology/topology.hpp"

namespace perfsim::test_support {

inline scenario::LlmScenario dgx_a100_scenario(generators::llm::TransformerConfig model,
                                               const generators::llm::ParallelConfig& parallel,
                                               int nodes) {
  const std::string source = PERFSIM_SOURCE_DIR;
  const std::string device_file = source + "/configs/devices/A100-80GB.json";
  std::string device_json = io::read_file_decompressed(device_file);
  const std::string architecture =
      devices::parse_device_json(device_json, device_file).architecture;
  return scenario::LlmScenario{
      std::move(model),
      scenario::with_te_workspaces(parallel, architecture),
      topology::with_node_count(
          topology::load_topology(source + "/configs/topologies/dgx-a100.json"), nodes),
      std::move(device_json),
      device_file,
      ""};
}

}  // namespace perfsim::test_support
