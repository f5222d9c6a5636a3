#include "collectives/hierarchical_all_to_all.hpp"

#include <algorithm>

namespace perfsim::collectives {

HierarchicalAllToAllLinks hierarchical_all_to_all_links(Bytes node_bytes, Bytes gpu_bytes,
                                                        const CommShape& shape) {
  const double nodes = std::max(1, shape.n_nodes);
  const double per_node = std::max(1, shape.ranks_per_node());
  return {static_cast<double>(node_bytes) * (nodes - 1.0) / nodes,
          static_cast<double>(gpu_bytes) * (per_node - 1.0) / per_node};
}

NcclEstimate hierarchical_all_to_all_estimate(Bytes node_bytes, Bytes gpu_bytes,
                                              const CommShape& shape, const NcclFabric& fabric) {
  if (shape.n_ranks <= 1)
    return {};
  const HierarchicalAllToAllLinks links =
      hierarchical_all_to_all_links(node_bytes, gpu_bytes, shape);
  NcclEstimate estimate;
  estimate.algorithm = NcclAlgorithm::kPointToPoint;
  estimate.protocol = NcclProtocol::kSimple;
  // One message's latency on the path (a network hop when the group spans nodes), and the
  // transport's per-message cost for each remote node (one RDMA peer per node).
  const CommShape pair{2, shape.n_nodes > 1 ? 2 : 1};
  estimate.latency_us = nccl_estimate(CollectiveKind::kSend, 0.0, pair, fabric).latency_us +
                        (shape.n_nodes - 1) * fabric.peer_latency_us;
  const double net_per_gpu_GBps =
      fabric.net_busbw_GBps /
      fabric.spine_slowdown[static_cast<std::size_t>(NcclAlgorithm::kPointToPoint)] /
      std::max(1, shape.ranks_per_node());
  const double network_us =
      links.network_bytes > 0.0 ? links.network_bytes / (1e3 * net_per_gpu_GBps) : 0.0;
  const double nvlink_us =
      links.nvlink_bytes > 0.0 ? links.nvlink_bytes / (1e3 * fabric.intra_busbw_GBps) : 0.0;
  const double transfer_us = std::max(network_us, nvlink_us);
  estimate.time_us = estimate.latency_us + transfer_us;
  estimate.tuner_time_us = estimate.time_us;
  estimate.algbw_GBps =
      transfer_us > 0.0 ? static_cast<double>(gpu_bytes) / (1e3 * transfer_us) : 0.0;
  return estimate;
}

}  // namespace perfsim::collectives
