#pragma once
// The NCCL tuner's view of a topology file (nccl_tuning.hpp), and the few per-fabric numbers a
// measured sweep corrects.
//
// Nominal bandwidths, bus bandwidth per node (GB/s):
//   intra: NVSwitch: NVLinks per GPU x per-link rate (NCCL's NVLink rates: 20 GB/s to Ampere,
//          20.6 Hopper, 40.1 Blackwell); NVLink mesh: the group's ring link class bandwidth;
//          PCIe only: 12 / 24 / 48 GB/s for PCIe 3 / 4 / 5 x16, and when the group's GPUs hang
//          off different CPU sockets, no more than the socket interconnect (NCCL's figures:
//          Broadwell 6, Skylake to Ice Lake 10, Sapphire Rapids 22, Emerald Rapids 40,
//          AMD Zen 1-2 16, Zen 3-4 24, Zen 5 32, ARM 6, POWER9 32 GB/s; unknown CPU: 10).
//   NVLS:  2 x 0.85 x intra on Hopper NVSwitch, 2 x 0.74 x intra on Blackwell (NCCL's NVLS
//          efficiency; all-reduce pipelines a reduce-scatter and an all-gather), none before.
//   net:   NICs serving the group's GPUs on one node x rate / 8.
// Calibration multiplies them (and NCCL's network hop latencies) by factors fitted to sweeps.
#include <string>

#include "collectives/nccl_tuning.hpp"
#include "topology/group_route.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {

struct FabricCalibration {
  double intra_scale = 1.0;
  double nvls_scale = 1.0;
  double net_scale = 1.0;
  double net_latency_scale = 1.0;
  // Multiplies NcclFabric::tree_net_efficiency; set only from sweeps run under a tuner plugin
  // that splits all-reduce between trees and the ring by size (curve_transfer.hpp).
  double tree_net_scale = 1.0;
  // Added to NcclFabric::peer_latency_us: all-to-all's cost per peer on another node, set only
  // from all-to-all sweeps across nodes (curve_transfer.hpp).
  double peer_latency_us = 0.0;
  std::string source;  // sweeps it was fitted to; "" = nominal
};

GpuGeneration gpu_generation(const std::string& gpu_model);

// The fabric under a group of `nics_per_node` NICs per node (0: the fabric the curves were
// measured on, NicSet::measured_count NICs) whose GPUs span
// `host_bridges` CPU sockets on a node (matters on PCIe-only nodes).
NcclFabric nominal_fabric(const topology::Topology& topology, int nics_per_node = 0,
                          int host_bridges = 1);
// Socket interconnect bandwidth for a CPU family string (see above).
double socket_link_GBps(const std::string& cpu);
NcclFabric calibrated(NcclFabric fabric, const FabricCalibration& calibration);
// nominal_fabric describes the fabric the topology's curves were measured on (NIC rate
// NicSet::measured_rate_Gbps). with_nic_transport turns it into the topology's own: network hop
// latencies scaled to hop_latency_us against NCCL's 14 us InfiniBand Simple hop, network
// bandwidth x rate_Gbps / measured rate x bandwidth_efficiency. Applied to the predicted fabric
// only: the curves (and the calibration to them) stay on the fabric they measured.
NcclFabric with_nic_transport(NcclFabric fabric, const topology::Topology& topology);
inline constexpr double kNcclNetSimpleHopLatency_us = 14.0;

// The topology's NCCL restrictions (topology.nccl), checked; InputError names the file.
NcclSettings topology_nccl_settings(const topology::Topology& topology);

}  // namespace perfsim::collectives
