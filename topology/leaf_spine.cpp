#include "topology/leaf_spine.hpp"

#include <algorithm>
#include <sstream>

namespace perfsim::topology {
namespace {

int leaves(const Topology& topology) {
  const LeafSpine& fabric = *topology.leaf_spine;
  const int groups = (topology.nodes + fabric.nodes_per_leaf - 1) / fabric.nodes_per_leaf;
  return fabric.rail_optimized ? groups * topology.node.nics->count : groups;
}

}  // namespace

int leaf_of(const Topology& topology, int node, int nic) {
  if (!topology.leaf_spine || !topology.node.nics)
    return -1;
  const LeafSpine& fabric = *topology.leaf_spine;
  const int group = node / fabric.nodes_per_leaf;
  return fabric.rail_optimized ? group * topology.node.nics->count + nic : group;
}

double leaf_uplink_capacity(const Topology& topology) {
  if (!topology.leaf_spine || !topology.node.nics)
    return 0.0;
  const LeafSpine& fabric = *topology.leaf_spine;
  const int ports_per_node = fabric.rail_optimized ? 1 : topology.node.nics->count;
  return fabric.nodes_per_leaf * ports_per_node / fabric.oversubscription;
}

std::vector<double> leaf_spine_traffic(const Topology& topology, std::span<const NicFlow> flows) {
  if (!topology.leaf_spine || !topology.node.nics)
    return {};
  const auto count = static_cast<std::size_t>(leaves(topology));
  std::vector<double> up(count, 0.0);
  std::vector<double> down(count, 0.0);
  for (const NicFlow& flow : flows) {
    const int from = leaf_of(topology, flow.source_node, flow.source_nic);
    const int to = leaf_of(topology, flow.destination_node, flow.destination_nic);
    if (from == to)
      continue;
    up[static_cast<std::size_t>(from)] += flow.rate;
    down[static_cast<std::size_t>(to)] += flow.rate;
  }
  for (std::size_t leaf = 0; leaf < count; ++leaf)
    up[leaf] = std::max(up[leaf], down[leaf]);
  return up;
}

SpineLoad spine_load(const Topology& topology, std::span<const double> leaf_traffic) {
  SpineLoad load;
  const double capacity = leaf_uplink_capacity(topology);
  if (!(capacity > 0.0))
    return load;
  for (std::size_t leaf = 0; leaf < leaf_traffic.size(); ++leaf) {
    const double ratio = leaf_traffic[leaf] / capacity;
    if (ratio > load.ratio) {
      load.ratio = ratio;
      load.busiest_leaf = static_cast<int>(leaf);
    }
  }
  return load;
}

SpineLoad spine_load(const Topology& topology, std::span<const NicFlow> flows) {
  const std::vector<double> traffic = leaf_spine_traffic(topology, flows);
  return spine_load(topology, traffic);
}

bool spine_can_bind(const Topology& topology) {
  return topology.leaf_spine && topology.node.nics && topology.leaf_spine->oversubscription > 1.0;
}

std::string leaf_spine_provenance(const Topology& topology) {
  if (!spine_can_bind(topology))
    return "";
  const LeafSpine& fabric = *topology.leaf_spine;
  std::ostringstream text;
  text << "leaf/spine " << fabric.oversubscription << ":1 ("
       << (fabric.rail_optimized ? "rail-optimized, " : "not rail-optimized, ")
       << fabric.nodes_per_leaf << " nodes per leaf): spine term NOMINAL (derived from "
       << topology.source << fabric.json_pointer
       << " and NCCL's rings/trees, no measured sweep across leaves)";
  return text.str();
}

}  // namespace perfsim::topology
