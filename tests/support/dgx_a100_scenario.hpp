#pragma once
// The cluster most simulation tests run on: DGX-A100 nodes (8 A100-80GB GPUs each) with the
// shipped device file and no fitted assets, so a test states only the model, the layout and
// the node count.
#include <string>
#include <utility>

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
  return scenario::LlmScenario{
      std::move(model),
      parallel,
      topology::with_node_count(
          topology::load_topology(source + "/configs/topologies/dgx-a100.json"), nodes),
      io::read_file_decompressed(device_file),
      device_file,
      ""};
}

}  // namespace perfsim::test_support
