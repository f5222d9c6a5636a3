#include "collectives/hierarchical.hpp"

#include <algorithm>
#include <cmath>

#include "collectives/bus_factor.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {

double bytes_per_nic_share(CollectiveKind kind, const HierarchicalShape& shape) {
  const double nodes = shape.n_nodes;
  const double nics = std::max(1, std::min(shape.nics_per_node, shape.ranks_per_node));
  const double leaving = (nodes - 1.0) / nodes;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * leaving / nics;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return leaving / nics;
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllv:
      return leaving * shape.ranks_per_node / nics;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
      return 1.0 / nics;
    case CollectiveKind::kSend:
    case CollectiveKind::kRecv:
      return 1.0;
    case CollectiveKind::kBarrier:
      return 0.0;
  }
  return 1.0;
}

int inter_node_latency_steps(CollectiveKind kind, int n_nodes) {
  if (n_nodes < 2)
    return 0;
  if (kind == CollectiveKind::kSend || kind == CollectiveKind::kRecv)
    return 1;
  if (kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kBarrier) {
    const int tree = 2 * static_cast<int>(std::ceil(std::log2(static_cast<double>(n_nodes))));
    return std::min(2 * (n_nodes - 1), tree);
  }
  return n_nodes - 1;
}

HierarchicalEstimate hierarchical_duration(CollectiveKind kind, Bytes bytes,
                                           const HierarchicalShape& shape, const FittedCurve* intra,
                                           const FittedCurve& inter, int reference_nics_per_node) {
  if (inter.n_nodes < 2)
    throw RuntimeFailure("curve '" + inter.name + "' was measured on " +
                         std::to_string(inter.n_nodes) +
                         " node(s): an inter-node link class needs a multi-node sweep");
  HierarchicalEstimate estimate;
  if (intra && shape.ranks_per_node > 1)
    estimate.intra_us = intra->curve.duration_us(static_cast<double>(bytes) *
                                                 bus_factor(kind, shape.ranks_per_node));

  const HierarchicalShape reference{inter.n_nodes, inter.n_ranks / inter.n_nodes,
                                    reference_nics_per_node};
  const double reference_share = bytes_per_nic_share(inter.measured_kind, reference);
  const double equivalent_bytes =
      static_cast<double>(bytes) * bytes_per_nic_share(kind, shape) / reference_share;
  const double reference_bus_bytes =
      equivalent_bytes * bus_factor(inter.measured_kind, inter.n_ranks);

  const auto& inter_parameters = inter.curve.parameters();
  const int reference_steps = inter_node_latency_steps(inter.measured_kind, inter.n_nodes);
  const DurationUs intra_latency_us = intra ? intra->curve.parameters().ts_us : 0.0;
  const DurationUs step_us = (intra && intra_latency_us < inter_parameters.ts_us)
                                 ? (inter_parameters.ts_us - intra_latency_us) / reference_steps
                                 : inter_parameters.ts_us / (reference_steps + 1);
  const int extra_steps = inter_node_latency_steps(kind, shape.n_nodes) - reference_steps;
  estimate.inter_us =
      std::max(inter.curve.duration_us(reference_bus_bytes) + step_us * extra_steps, step_us);
  estimate.total_us = std::max(estimate.intra_us, estimate.inter_us);
  estimate.region = estimate.inter_us >= estimate.intra_us
                        ? inter.curve.region(reference_bus_bytes)
                        : intra->curve.region(static_cast<double>(bytes) *
                                              bus_factor(kind, shape.ranks_per_node));
  return estimate;
}

}  // namespace perfsim::collectives
