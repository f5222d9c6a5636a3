#pragma once
// An LLM scenario on H100-SXM GPUs (the shipped device file, no fitted assets) over a given
// cluster, link sharing as asked: the set-up of the NIC and link sharing tests. The layout gets
// the device's Transformer Engine workspaces as the product's scenarios do
// (scenario::with_te_workspaces).
#include <string>
#include <utility>

#include "devices/device_spec.hpp"
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
  std::string device_json = io::read_file_decompressed(device_file);
  const std::string architecture =
      devices::parse_device_json(device_json, device_file).architecture;
  scenario::LlmScenario scenario{
      std::move(model),   scenario::with_te_workspaces(parallel, architecture),
      std::move(cluster), std::move(device_json),
      device_file,        ""};
  scenario.link_sharing = link_sharing;
  return scenario;
}

}  // namespace perfsim::test_support
