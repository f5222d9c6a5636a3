#pragma once
// Collectives spanning nodes: an intra-node phase over NVLink/NVSwitch and an inter-node phase
// over the NICs, the inter-node curve measured at a few nodes and scaled to more.
//
// The NIC-class curve is fitted to a whole multi-node sweep (say 2 nodes x 8 GPUs), so it
// already contains that run's intra-node phases. For N nodes with g ranks per node and r NICs
// used per node it is evaluated at the message size that loads each NIC as much as ours does:
//   bytes per NIC = message x share(kind, N, g, r), with share for
//     all-reduce 2(N-1)/N / r, all-gather and reduce-scatter (N-1)/N / r,
//     all-to-all(v) (N-1)/N x g / r (nothing is reduced, every rank's bytes leave), broadcast /
//     reduce 1 / r, send/recv 1,
// plus the latency of the extra algorithm steps real NCCL takes: all-reduce
// min(ring 2(N-1), tree 2 ceil(log2 N)) steps, others ring N-1, each costing
// alpha = (ts_inter - ts_intra) / steps(reference), or ts_inter / (steps(reference) + 1) when
// the intra-node latency is unknown or not smaller. Intra- and inter-node phases are pipelined
// by NCCL (chunks flow through both), so the result is the slower of the two phases, not the sum.
#include "collectives/fitted_curve.hpp"
#include "perfsim/comm.hpp"

namespace perfsim::collectives {

struct HierarchicalShape {
  int n_nodes = 2;
  int ranks_per_node = 1;
  int nics_per_node = 1;
};

// Fraction of the message crossing each NIC (see above).
double bytes_per_nic_share(CollectiveKind kind, const HierarchicalShape& shape);
// Sequential latency steps of the inter-node phase (see above).
int inter_node_latency_steps(CollectiveKind kind, int n_nodes);

struct HierarchicalEstimate {
  DurationUs intra_us = 0;  // 0 with one rank per node
  DurationUs inter_us = 0;
  DurationUs total_us = 0;
  CurveRegion region = CurveRegion::kLatency;  // of the phase that set total_us
};

// `inter` must come from a multi-node sweep (n_nodes >= 2), else RuntimeFailure; `intra` may be
// null (one rank per node, or no intra-node curve). `reference_nics_per_node`: NICs per node of
// the sweep `inter` was fitted to.
HierarchicalEstimate hierarchical_duration(CollectiveKind kind, Bytes bytes,
                                           const HierarchicalShape& shape, const FittedCurve* intra,
                                           const FittedCurve& inter, int reference_nics_per_node);

}  // namespace perfsim::collectives
