#pragma once
// An LLM scenario on H100-SXM GPUs (the shipped device file, no fitted assets) over a given
// cluster, link sharing as asked: the set-up of the NIC and link sharing tests.
#include <string>
#include <utility>

#include "generators/llm/llm_model_config.hpp"
#include "io/input_file.hpp"
#include "scenario/llm_simulation.hpp"
#include "topology/topology.hpp"

namespace perfsim::test_support {

inline scenario::LlmScenario h100_sxm_scenario(generators::llm::TransformerConfig model,
                                               const generators::llm::ParallelConfig& parallel,
                                               topology::Topology cluster, bool link_sharing) {
  const std::string device_file =
      std::string(PERFSIM_SOURCE_DIR) + "/configs/devices/H100-SXM.json";
  scenario::LlmScenario scenario{std::move(model),   parallel,
                                 std::move(cluster), io::read_file_decompressed(device_file),
                                 device_file,        ""};
  scenario.link_sharing = link_sharing;
  return scenario;
}

}  // namespace perfsim::test_support
