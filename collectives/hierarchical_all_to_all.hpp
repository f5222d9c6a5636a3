#pragma once
// DeepEP's normal (training) dispatch and combine, and NVIDIA's HybridEP, as Megatron-Core's
// flex token dispatcher runs them (kHierarchicalAllToAll). A token is sent over the network once
// per distinct destination node (to the GPU with the sender's local index there) and forwarded
// over NVLink once per distinct destination GPU of that node; copies for one GPU are sent once
// (and summed there on combine). Sources: deepseek-ai/DeepEP docs/legacy.md and
// csrc/kernels/internode.cu, Hybrid-EP_Implementation.md (README "Flex token dispatcher").
//
// Per rank, with N nodes and G ranks per node in the group, node_bytes and gpu_bytes as
// CommInfo carries them (perfsim/comm.hpp):
//   network bytes = node_bytes x (N - 1) / N   (the copies for other nodes)
//   NVLink bytes  = gpu_bytes  x (G - 1) / G   (the copies for other GPUs of the node)
//   time = latency + max(network / NIC share per GPU, NVLink / NVLink rate)
// (the two phases are pipelined, the slower sets the pace). The rates are the group's fabric as
// the collective model has it (nccl_fabric.hpp, calibrated to the topology's curves): NIC share
// per GPU = the node's NICs serving the group / G (slowed by an oversubscribed spine), NVLink =
// the intra-node bus bandwidth. Latency: NCCL's point-to-point base and hop latency plus the
// fabric's per-peer network cost for each of the N - 1 nodes a rank sends to.
#include "collectives/nccl_tuning.hpp"
#include "perfsim/units.hpp"

namespace perfsim::collectives {

struct HierarchicalAllToAllLinks {
  double network_bytes = 0.0;  // through this rank's share of the NICs
  double nvlink_bytes = 0.0;   // over NVLink to the other GPUs of a node
};

HierarchicalAllToAllLinks hierarchical_all_to_all_links(Bytes node_bytes, Bytes gpu_bytes,
                                                        const CommShape& shape);

// The duration on `fabric` (algorithm kPointToPoint, protocol Simple). A group of one rank
// costs 0.
NcclEstimate hierarchical_all_to_all_estimate(Bytes node_bytes, Bytes gpu_bytes,
                                              const CommShape& shape, const NcclFabric& fabric);

}  // namespace perfsim::collectives
