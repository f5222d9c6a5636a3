#pragma once
// The cluster most simulation tests run on: two DGX-A100 nodes (16 A100-80GB GPUs) with the
// shipped device file and no fitted assets, so a test states only the model and the layout.
#include <string>
#include <utility>

#include "generators/llm/llm_model_config.hpp"
#include "io/input_file.hpp"
#include "scenario/llm_simulation.hpp"
#include "topology/topology.hpp"

namespace perfsim::test_support {

inline scenario::LlmScenario two_dgx_a100_scenario(
    generators::llm::TransformerConfig model, const generators::llm::ParallelConfig& parallel) {
  const std::string source = PERFSIM_SOURCE_DIR;
  const std::string device_file = source + "/configs/devices/A100-80GB.json";
  return scenario::LlmScenario{
      std::move(model),
      parallel,
      topology::with_node_count(
          topology::load_topology(source + "/configs/topologies/dgx-a100.json"), 2),
      io::read_file_decompressed(device_file),
      device_file,
      ""};
}

}  // namespace perfsim::test_support
