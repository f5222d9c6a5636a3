#pragma once
// What a collective sends between nodes under the algorithm NCCL runs, as NIC-to-NIC flows, so
// a leaf/spine fabric (topology/leaf_spine.hpp) can say how much of it crosses the spine.
//
// Rules, from how NCCL 2.2x connects its channels across nodes (src/graph/connect.cc,
// src/graph/trees.cc; our own code):
//  - Node order: the communicator's nodes in order of their first rank in the group.
//  - Rails: each channel uses one NIC per node and NCCL keeps an inter-node hop on one rail
//    (NCCL_CROSS_NIC=2 alternates rings on odd nodes so that consecutive nodes use the same
//    NIC; all-to-all forwards over NVLink to the GPU on the peer's rail, PXN). The group's
//    i-th rail (NIC index order) on one node meets the i-th on the next; groups that use
//    different NICs on different nodes therefore cross rails.
//  - Ring (all-reduce, all-gather, reduce-scatter): node k sends to node k+1 and the last to
//    the first, every rail at line rate. Broadcast and reduce are chains: no edge back to the
//    first node.
//  - Tree and NVLS-tree: NCCL's double binary tree over the node order (tree 0 a binary tree
//    whose links follow the node index's lowest set bit, tree 1 its mirror for an even node
//    count, shifted by one for an odd one). Every edge of both trees carries the same bytes in
//    both directions (reduce up, broadcast down, pipelined); the node with the most edges sets
//    the rate, so each edge runs at 1 / (that node's edges) of line rate.
//  - All-to-all(v): every node sends the same bytes to each of the other N - 1 nodes, at
//    1 / (N - 1) of line rate per rail to each. Send/recv: one flow, line rate.
// The flows of one group alone use the group's NICs. `with_siblings` adds the sibling groups
// of the symmetric layouts simulated, which run the same collective at the same moment
// (topology/nic_sharing.hpp): the job's other GPUs on the group's nodes, on their own rails,
// and the job's other nodes under the same leaves, whose groups are shaped like this one (each
// node's flows scaled by the job's nodes / the group's nodes in its leaf group). A DP pair of
// GPU 0 on nodes 0 and 8 under leaves of 4 nodes thus loads leaf 0 with 4 nodes x 8 rails.
#include <span>
#include <vector>

#include "collectives/nccl_tuning.hpp"
#include "perfsim/comm.hpp"
#include "topology/leaf_spine.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {

// The flows, in NIC line rates with the busiest NIC at line rate. `world_size` (job GPUs; 0 =
// the whole cluster) bounds the siblings.
std::vector<topology::NicFlow> collective_flows(const topology::Topology& topology,
                                                CollectiveKind kind, NcclAlgorithm algorithm,
                                                std::span<const int> global_ranks,
                                                bool with_siblings = false, int world_size = 0);

// The collective alone: max(1, busiest leaf's spine traffic / its uplink capacity); 1 without
// an oversubscribed leaf/spine section, for one node, and for algorithms inside a node (NVLS).
double spine_slowdown(const topology::Topology& topology, CollectiveKind kind,
                      NcclAlgorithm algorithm, std::span<const int> global_ranks);

}  // namespace perfsim::collectives
