#pragma once
// Clusters of any size from one node description: `--nodes N --gpus-per-node G` on the
// commands that take a topology. N nodes reuse the node as it is (with_node_count); a smaller
// node keeps local GPUs 0 .. G-1 of the description with their NVSwitch or NVLink links, PCIe
// switches and NIC rails (a DGX/HGX board with G GPUs populated). A larger node has links the
// description does not give, so it is refused.
#include "topology/topology.hpp"

namespace perfsim::topology {

// Throws InputError(source, "/node/gpus", why) for G < 1 or G above the description's GPUs.
Topology with_gpus_per_node(Topology topology, int gpus_per_node);

// Both overrides; 0 keeps the description's value.
Topology resized(Topology topology, int nodes, int gpus_per_node);

}  // namespace perfsim::topology
