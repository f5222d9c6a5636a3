#pragma once
// GPUs sharing one NIC (8 GPUs on 4 NICs, as on some cloud instances and PCIe servers, or one
// NIC per node): what a topology's NIC description adds to one NIC per GPU, and how many
// transfers load a NIC at once.
//
// Schema (under /node/nics, beside count, rate_Gbps, rails, link_class):
//  - `rails` may be left out when the NICs split the node's GPUs evenly and in order: NIC i
//    serves GPUs i*g .. i*g+g-1 (g = gpus / count), so 4 NICs for 8 GPUs serve [0,1], [2,3],
//    [4,5], [6,7] and 1 NIC serves all; a count that does not divide the GPUs needs rails.
//  - `curves_nics_per_node`: NICs per node of the cluster the NIC link class's curves were
//    measured on, where it differs from `count` (a 4-NIC node priced from sweeps of 8-NIC
//    nodes). The collective model carries the curves from that many NICs to the NICs a group
//    crosses (collectives/nccl_fabric.hpp: NICs x rate / 8 per node), so a ring over the 8 GPUs
//    of 4-NIC nodes gets half the network bandwidth of 8-NIC nodes.
#include <span>
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace perfsim::topology {

// The rails of `nics` NICs splitting `gpus` GPUs evenly and in order. InputError(source,
// pointer) when `nics` does not divide `gpus`.
std::vector<std::vector<int>> even_rails(int nics, int gpus, const std::string& source,
                                         const std::string& pointer);

// How many copies of a collective's traffic cross the busiest NIC its group uses: for each
// member, the GPUs its NIC serves that run a rank of the job (global rank < world_size) divided
// by the members behind that NIC (their traffic is already one group's, priced by the
// collective model over the NICs the group crosses). A GPU behind the NIC outside the group runs
// the same program in another group of the same kind (the other TP ranks of a DP or pipeline
// group), so its copy crosses the NIC at the same moment. 1 when the group stays in one node,
// when every GPU has its own NIC, or when the group holds every GPU behind its NICs.
double nic_copies(const Topology& topology, std::span<const int> members, int world_size);

}  // namespace perfsim::topology
