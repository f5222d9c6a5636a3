#pragma once
// The PCIe path between the GPUs of a group on a PCIe-only node, and the transport NCCL picks
// on it (NCCL's src/graph/paths.cc, read for its rules; our own code).
//
// Path types (nvidia-smi topo / NCCL PATH_*), the worst pair of the group sets it:
//   PIX/PXB  both GPUs under one PCIe switch (the topology's node/pcie/switches);
//   PHB      different switches (or root ports) under one host bridge (CPU socket);
//   SYS      different host bridges: across the socket interconnect.
// Transport: P2P when the GPUs support it (node/pcie/transport/p2p_supported) and the path is no
// worse than PXB (NCCL's default P2P level; PATH_SYS on AMD x86 nodes of at most two GPUs),
// else SHM through pinned host memory.
//
// Bandwidth per GPU, before calibration (nominal PCIe x16: 12 / 24 / 48 GB/s, nccl_fabric.hpp):
//   P2P: each GPU's own x16 link (a ring moves one stream in and one out of every GPU, full
//        duplex), bounded by the socket link on SYS paths.
//   SHM: every byte goes up from the sender into host memory and down to the receiver, through
//        each PCIe switch uplink on the way: the group's GPUs under one switch share its uplink,
//        so k GPUs sending at once get x16 / k each; and a GPU that both writes to and reads
//        from host memory keeps a fitted fraction (shm_duplex_efficiency) of the one-way rate.
//        NCCL picks the transport per ring edge and builds the ring switch by switch, so where
//        P2P is supported only the edge leaving each switch uses SHM (k = 1); where it is not,
//        k = the group's GPUs under the fullest switch.
// The tuner applies the sharing per collective (nccl_tuning.hpp): a ring all-reduce, all-gather,
// reduce-scatter or all-to-all has every GPU sending (k = GPUs under the fullest uplink, each
// also receiving); a broadcast or reduce chain has n - 1 senders and, on two GPUs, one GPU only
// sends while the other only receives.
#include <span>

#include "collectives/nccl_tuning.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {

enum class PciePathType { kPix, kPhb, kSys };

struct PciePath {
  PciePathType type = PciePathType::kPix;
  bool p2p = true;
  // The most of the group's GPUs under one PCIe switch (1 when each has its own root port).
  int gpus_per_uplink = 1;
};

// The path over `local_gpus` (distinct local GPU indices of one PCIe-only node).
PciePath pcie_path(const topology::Topology& topology, std::span<const int> local_gpus);

// The fabric with the path's transport: on PCIe-only nodes under SHM, the uplink sharing and
// the duplex efficiency the tuner applies; unchanged on NVLink nodes and under P2P.
NcclFabric with_pcie_path(NcclFabric fabric, const topology::Topology& topology,
                          const PciePath& path);

}  // namespace perfsim::collectives
