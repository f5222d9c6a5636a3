#include "collectives/nccl_fabric.hpp"

#include <algorithm>

namespace perfsim::collectives {
namespace {

double nvlink_GBps_per_link(GpuGeneration generation) {
  switch (generation) {
    case GpuGeneration::kHopper:
      return 20.6;
    case GpuGeneration::kBlackwell:
      return 40.1;
    default:
      return 20.0;
  }
}

double pcie_x16_GBps(int generation) {
  return generation >= 5 ? 48.0 : generation == 4 ? 24.0 : 12.0;
}

bool contains(const std::string& text, const char* word) {
  return text.find(word) != std::string::npos;
}

}  // namespace

double socket_link_GBps(const std::string& cpu) {
  if (contains(cpu, "broadwell"))
    return 6.0;
  if (contains(cpu, "emerald"))
    return 40.0;
  if (contains(cpu, "sapphire"))
    return 22.0;
  if (contains(cpu, "zen5"))
    return 32.0;
  if (contains(cpu, "zen3") || contains(cpu, "zen4"))
    return 24.0;
  if (contains(cpu, "amd") || contains(cpu, "zen"))
    return 16.0;
  if (contains(cpu, "power"))
    return 32.0;
  if (contains(cpu, "arm"))
    return 6.0;
  return 10.0;  // Skylake-class Intel, and unknown
}

GpuGeneration gpu_generation(const std::string& gpu_model) {
  if (contains(gpu_model, "B200") || contains(gpu_model, "B100") || contains(gpu_model, "GB2"))
    return GpuGeneration::kBlackwell;
  if (contains(gpu_model, "H100") || contains(gpu_model, "H200") || contains(gpu_model, "H800") ||
      contains(gpu_model, "GH"))
    return GpuGeneration::kHopper;
  if (contains(gpu_model, "V100") || contains(gpu_model, "GV100"))
    return GpuGeneration::kVolta;
  return GpuGeneration::kAmpere;
}

NcclFabric nominal_fabric(const topology::Topology& topology, int nics_per_node, int host_bridges) {
  const topology::NodeSpec& node = topology.node;
  NcclFabric fabric;
  fabric.generation = gpu_generation(node.gpu_model);
  fabric.intra_nvlink = node.fabric != topology::IntraNodeFabric::kPcie;
  switch (node.fabric) {
    case topology::IntraNodeFabric::kNvSwitch:
      fabric.intra_busbw_GBps = node.nvlinks_per_gpu * nvlink_GBps_per_link(fabric.generation);
      break;
    case topology::IntraNodeFabric::kNvLinkMesh: {
      // The thickest ring NCCL can build over all GPUs: its link class's nominal bandwidth.
      double best = 0.0;
      for (const auto& [links, name] : node.ring_link_classes)
        best = std::max(best, topology.link_class(name).bandwidth_GBps);
      fabric.intra_busbw_GBps = best > 0.0 ? best : pcie_x16_GBps(node.pcie_generation);
      break;
    }
    case topology::IntraNodeFabric::kPcie:
      fabric.intra_busbw_GBps = pcie_x16_GBps(node.pcie_generation);
      if (host_bridges > 1)
        fabric.intra_busbw_GBps = std::min(fabric.intra_busbw_GBps, socket_link_GBps(node.cpu));
      break;
  }
  const bool nvswitch = node.fabric == topology::IntraNodeFabric::kNvSwitch;
  if (nvswitch && fabric.generation == GpuGeneration::kHopper) {
    fabric.nvls = true;
    fabric.nvls_busbw_GBps = 2.0 * 0.85 * fabric.intra_busbw_GBps;
  } else if (nvswitch && fabric.generation == GpuGeneration::kBlackwell) {
    fabric.nvls = true;
    fabric.nvls_busbw_GBps = 2.0 * 0.74 * fabric.intra_busbw_GBps;
  }
  if (node.nics) {
    const int nics =
        nics_per_node > 0 ? std::min(nics_per_node, node.nics->count) : node.nics->measured_count();
    fabric.net_busbw_GBps = nics * node.nics->measured_rate_Gbps() / 8.0;
  }
  fabric.amd_cpu = contains(node.cpu, "amd") || contains(node.cpu, "zen");
  if (topology.nccl.channels > 0)
    fabric.channels = topology.nccl.channels;
  return fabric;
}

NcclFabric calibrated(NcclFabric fabric, const FabricCalibration& calibration) {
  fabric.intra_busbw_GBps *= calibration.intra_scale;
  fabric.nvls_busbw_GBps *= calibration.nvls_scale;
  fabric.net_busbw_GBps *= calibration.net_scale;
  fabric.net_latency_scale *= calibration.net_latency_scale;
  fabric.tree_net_efficiency *= calibration.tree_net_scale;
  fabric.peer_latency_us += calibration.peer_latency_us;
  return fabric;
}

NcclFabric with_nic_transport(NcclFabric fabric, const topology::Topology& topology) {
  if (!topology.node.nics)
    return fabric;
  const topology::NicSet& nics = *topology.node.nics;
  if (nics.hop_latency_us > 0.0)
    fabric.net_latency_scale *= nics.hop_latency_us / kNcclNetSimpleHopLatency_us;
  fabric.net_busbw_GBps *= nics.rate_Gbps / nics.measured_rate_Gbps() * nics.bandwidth_efficiency;
  fabric.peer_latency_us += nics.peer_latency_us;
  fabric.tree_net_efficiency *= nics.tree_bandwidth_efficiency;
  return fabric;
}

NcclSettings topology_nccl_settings(const topology::Topology& topology) {
  NcclSettings settings = parse_nccl_settings(topology.nccl.algorithms, topology.nccl.protocols,
                                              topology.source, "/nccl");
  settings.tuner_ring_from_bytes_per_rank = topology.nccl.tuner_ring_from_bytes_per_rank;
  settings.min_ctas = topology.nccl.min_ctas;
  settings.max_ctas = topology.nccl.max_ctas;
  return settings;
}

}  // namespace perfsim::collectives
