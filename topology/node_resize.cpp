#include "topology/node_resize.hpp"

#include <algorithm>
#include <string>

#include "perfsim/error.hpp"

namespace perfsim::topology {
namespace {

std::vector<int> below(const std::vector<int>& gpus, int limit) {
  std::vector<int> kept;
  std::copy_if(gpus.begin(), gpus.end(), std::back_inserter(kept),
               [limit](int gpu) { return gpu < limit; });
  return kept;
}

}  // namespace

Topology with_gpus_per_node(Topology topology, int gpus_per_node) {
  NodeSpec& node = topology.node;
  if (gpus_per_node == node.gpus)
    return topology;
  if (gpus_per_node < 1)
    throw InputError(topology.source, "/node/gpus", "GPUs per node must be at least 1");
  if (gpus_per_node > node.gpus)
    throw InputError(topology.source, "/node/gpus",
                     "the node description has " + std::to_string(node.gpus) +
                         " GPUs; a node with " + std::to_string(gpus_per_node) +
                         " needs its own description (its links are not in this one)");
  node.gpus = gpus_per_node;
  if (!node.nvlink_matrix.empty()) {
    node.nvlink_matrix.resize(static_cast<std::size_t>(gpus_per_node));
    for (auto& row : node.nvlink_matrix)
      row.resize(static_cast<std::size_t>(gpus_per_node));
  }
  std::vector<PcieSwitch> switches;
  for (PcieSwitch& pcie_switch : node.pcie_switches) {
    pcie_switch.gpus = below(pcie_switch.gpus, gpus_per_node);
    if (!pcie_switch.gpus.empty())
      switches.push_back(std::move(pcie_switch));
  }
  node.pcie_switches = std::move(switches);
  if (node.nics) {
    std::vector<std::vector<int>> rails;
    for (const auto& rail : node.nics->rails) {
      std::vector<int> kept = below(rail, gpus_per_node);
      if (!kept.empty())
        rails.push_back(std::move(kept));
    }
    node.nics->rails = std::move(rails);
    node.nics->count = static_cast<int>(node.nics->rails.size());
  }
  topology.name += "-" + std::to_string(gpus_per_node) + "gpu";
  topology.description += " Cut to " + std::to_string(gpus_per_node) + " GPUs per node.";
  return topology;
}

Topology resized(Topology topology, int nodes, int gpus_per_node) {
  if (gpus_per_node > 0)
    topology = with_gpus_per_node(std::move(topology), gpus_per_node);
  if (nodes > 0)
    topology = with_node_count(std::move(topology), nodes);
  return topology;
}

}  // namespace perfsim::topology
