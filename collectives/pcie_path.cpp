#include "collectives/pcie_path.hpp"

#include <algorithm>
#include <map>

namespace perfsim::collectives {
namespace {

// Index of the PCIe switch listing `gpu`, or -1 when the topology lists none for it.
int switch_of(const topology::NodeSpec& node, int gpu) {
  for (std::size_t i = 0; i < node.pcie_switches.size(); ++i) {
    const auto& gpus = node.pcie_switches[i].gpus;
    if (std::find(gpus.begin(), gpus.end(), gpu) != gpus.end())
      return static_cast<int>(i);
  }
  return -1;
}

PciePathType pair_path(const topology::NodeSpec& node, int a, int b) {
  const int switch_a = switch_of(node, a);
  if (switch_a >= 0 && switch_a == switch_of(node, b))
    return PciePathType::kPix;
  return node.host_bridge_of(a) == node.host_bridge_of(b) ? PciePathType::kPhb : PciePathType::kSys;
}

bool amd_cpu(const std::string& cpu) {
  return cpu.find("amd") != std::string::npos || cpu.find("zen") != std::string::npos;
}

}  // namespace

PciePath pcie_path(const topology::Topology& topology, std::span<const int> local_gpus) {
  const topology::NodeSpec& node = topology.node;
  PciePath path;
  for (std::size_t i = 0; i < local_gpus.size(); ++i) {
    for (std::size_t j = i + 1; j < local_gpus.size(); ++j)
      path.type = std::max(path.type, pair_path(node, local_gpus[i], local_gpus[j]));
  }
  // NCCL picks the transport per ring edge and orders the ring switch by switch: with P2P
  // supported, pairs under one switch use P2P and only the one edge leaving each switch goes
  // through host memory; without P2P every GPU under a switch writes through its uplink.
  std::map<int, int> per_switch;
  for (int gpu : local_gpus) {
    const int index = switch_of(node, gpu);
    if (index >= 0 && !node.pcie_transport.p2p_supported)
      path.gpus_per_uplink = std::max(path.gpus_per_uplink, ++per_switch[index]);
  }
  // NCCL's P2P level: PXB, or SYS on AMD x86 systems of at most two GPUs.
  const PciePathType p2p_level =
      amd_cpu(node.cpu) && node.gpus <= 2 ? PciePathType::kSys : PciePathType::kPix;
  path.p2p = node.pcie_transport.p2p_supported && path.type <= p2p_level;
  return path;
}

NcclFabric with_pcie_path(NcclFabric fabric, const topology::Topology& topology,
                          const PciePath& path) {
  if (topology.node.fabric != topology::IntraNodeFabric::kPcie || path.p2p)
    return fabric;
  fabric.shm_gpus_per_uplink = path.gpus_per_uplink;
  fabric.shm_duplex_efficiency = topology.node.pcie_transport.shm_duplex_efficiency;
  fabric.shm_hop_extra_latency_us = topology.node.pcie_transport.shm_hop_extra_latency_us;
  return fabric;
}

}  // namespace perfsim::collectives
