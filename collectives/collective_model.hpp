#pragma once
// The collective cost model the engine calls: a topology plus fitted curves (model assets).
// For a group it resolves the link classes (topology/group_route.hpp), takes the curve the
// topology names for the collective on the class the traffic crosses (the NIC class when the
// group spans nodes, else the intra-node class), and carries it from the shape it was measured
// on to the group's shape and collective with NCCL's algorithm model (curve_transfer.hpp):
// per-collective bus factors, ring/tree/NVLS/NVLS-tree and LL/LL128/Simple choice, ring
// latency linear in ranks, tree latency logarithmic in nodes, the bandwidth that binds. The
// fabric's nominal bandwidths and network latency are first calibrated on the curves the
// topology names (nccl_fabric.hpp), and its NCCL restrictions (topology "nccl") apply.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectives/fitted_curve.hpp"
#include "collectives/nccl_fabric.hpp"
#include "collectives/nccl_tuning.hpp"
#include "perfsim/duration_source.hpp"
#include "topology/group_route.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {

struct CollectivePrediction {
  DurationUs duration_us = 0;
  topology::GroupRoute route;
  std::string curve;  // asset the duration was carried from ("" for one rank)
  NcclEstimate nccl;  // the algorithm model on the group: NCCL's algorithm and protocol
  CurveRegion region = CurveRegion::kLatency;  // by the model's latency / transfer split
  // How much an oversubscribed leaf/spine slows the chosen algorithm's network bandwidth, the
  // group alone (spine_traffic.hpp); 1 when the spine keeps up or the topology has none.
  double spine_slowdown = 1.0;
};

class CollectiveModel final : public CommDurationSource {
 public:
  // Checks that every curve the topology names is in `curves` (InputError naming the topology
  // file and the JSON pointer of the reference otherwise). `groups` maps the trace's process
  // group names to global ranks; "" (or a group listed without ranks) is the world: ranks
  // 0..call.group_size-1, or the whole cluster when group_size is 0.
  // Also throws InputError for invalid topology NCCL settings. `settings` replaces the
  // topology's when given (command-line NCCL_ALGO / NCCL_PROTO).
  CollectiveModel(topology::Topology topology, CurveSet curves,
                  std::vector<ProcessGroup> groups = {},
                  std::optional<NcclSettings> settings = std::nullopt);

  // The duration on every member of call.group. The size is model_message_bytes(*call.comm)
  // of the calling rank: for all-to-allv the engine should pass the group-wide maximum
  // (seed 001 Sec. IV-A) so that every member computes the same duration. Throws InputError
  // for an unknown group and when the topology names no curve for the collective.
  DurationUs collective_duration_us(const CollectiveCall& call) const override;
  std::string_view name() const override { return "collective-model"; }

  // Direct query: a collective of `bytes` (nccl-tests size convention) over global ranks.
  CollectivePrediction predict(CollectiveKind kind, Bytes bytes,
                               std::span<const int> global_ranks) const;
  // A kHierarchicalAllToAll (DeepEP / HybridEP dispatch or combine) of node_bytes and gpu_bytes
  // per rank (perfsim/comm.hpp) over global ranks: hierarchical_all_to_all.hpp on the group's
  // calibrated fabric. collective_duration_us routes that kind here.
  CollectivePrediction predict_hierarchical_all_to_all(Bytes node_bytes, Bytes gpu_bytes,
                                                       std::span<const int> global_ranks) const;
  const topology::Topology& topology() const { return topology_; }
  const FabricCalibration& calibration() const { return calibration_; }
  const NcclSettings& settings() const { return settings_; }

 private:
  // The curve the link class names for `kind` (with fallbacks), then its other counts; all
  // bandwidth-scaled as the topology says.
  std::vector<FittedCurve> curves_for(const std::string& link_class, CollectiveKind kind) const;
  std::vector<int> ranks_of(const CollectiveCall& call) const;
  // The fabric under a resolved group: its NICs and sockets, calibrated, with the topology's
  // NIC transport and spine across nodes.
  NcclFabric group_fabric(CollectiveKind kind, const topology::GroupRoute& route,
                          std::span<const int> global_ranks) const;

  topology::Topology topology_;
  CurveSet curves_;
  NcclSettings settings_;
  FabricCalibration calibration_;
  // When the NIC class's curves were measured on other GPUs (nics/transport/curves_gpu_model):
  // that node, and the calibration of its fabric to those curves. Groups across nodes carry
  // the curves from it; calibration_ then holds this node's NVLink terms (from its own
  // intra-node curves) and the measured network terms.
  std::optional<topology::Topology> nic_curves_topology_;
  FabricCalibration nic_curves_calibration_;
  // When a PCIe-only node's curves were measured on another box (node/pcie/transport/
  // curves_topology): that box, and the calibration of its fabric to them. In-node groups carry
  // the curves from it; calibration_ then holds its PCIe efficiency (intra_scale).
  std::optional<topology::Topology> pcie_curves_topology_;
  FabricCalibration pcie_curves_calibration_;
  std::map<std::string, std::vector<int>> groups_;
  // Durations already computed, by (group, group size, kind, bytes): every member of a group
  // asks for the same collectives, and resolving a group's route costs O(members). Shared so
  // the model stays copyable; locked because the planner prices layouts on several threads.
  struct DurationKey {
    std::string group;
    int group_size = 0;
    CollectiveKind kind = CollectiveKind::kAllReduce;
    Bytes bytes = 0;
    Bytes gpu_bytes = 0;  // kHierarchicalAllToAll: CommInfo::bytes_out (bytes: bytes_in)
    bool operator==(const DurationKey&) const = default;
  };
  struct DurationKeyHash {
    std::size_t operator()(const DurationKey& key) const;
  };
  struct DurationMemo {
    std::mutex mutex;
    std::unordered_map<DurationKey, DurationUs, DurationKeyHash> durations;
  };
  std::shared_ptr<DurationMemo> memo_ = std::make_shared<DurationMemo>();
};

// Predicts every sample of a measured sweep on ranks 0..n_ranks-1 of the model's topology.
// Throws InputError when the topology places those ranks on a different number of nodes than
// the sweep was measured on.
std::vector<PredictionPoint> predict_sweep(const CollectiveModel& model,
                                           const CollectiveSweep& sweep);

// Free-function form of CollectiveModel::predict(...).duration_us.
DurationUs collective_duration_us(const CollectiveModel& model, CollectiveKind kind, Bytes bytes,
                                  std::span<const int> global_ranks);

}  // namespace perfsim::collectives
