#include "collectives/collective_model.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>

#include "collectives/bus_factor.hpp"
#include "collectives/curve_transfer.hpp"
#include "collectives/hierarchical_all_to_all.hpp"
#include "collectives/pcie_path.hpp"
#include "collectives/spine_traffic.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

// The box a PCIe-only node's curves were measured on (node/pcie/transport/curves_topology,
// relative to the folder of the topology that names it).
topology::Topology measured_box_topology(const topology::Topology& topology) {
  const std::filesystem::path named(topology.node.pcie_transport.curves_topology);
  const std::filesystem::path path =
      named.is_absolute() ? named : std::filesystem::path(topology.source).parent_path() / named;
  if (!std::filesystem::exists(path))
    throw InputError(topology.source,
                     topology.node.pcie_transport.json_pointer + "/curves_topology",
                     "no topology file '" + path.string() + "'");
  return topology::load_topology(path.string());
}

// The fabric of `box` under its first `gpus` GPUs (the GPUs a sweep on it ran on): the sockets
// they span, their PCIe path and NCCL's transport on it.
NcclFabric box_fabric(const topology::Topology& box, int gpus) {
  std::vector<int> local(std::max(1, std::min(gpus, box.node.gpus)));
  std::iota(local.begin(), local.end(), 0);
  std::set<std::string> bridges;
  for (int gpu : local)
    bridges.insert(box.node.host_bridge_of(gpu));
  return with_pcie_path(nominal_fabric(box, 0, static_cast<int>(bridges.size())), box,
                        pcie_path(box, local));
}

}  // namespace

CollectiveModel::CollectiveModel(topology::Topology topology, CurveSet curves,
                                 std::vector<ProcessGroup> groups,
                                 std::optional<NcclSettings> settings)
    : topology_(std::move(topology)), curves_(std::move(curves)) {
  settings_ = settings ? *settings : topology_nccl_settings(topology_);
  // NCCL_ALGO / NCCL_PROTO given for the run restrict the algorithms; the cluster's tuner
  // plugin still chooses among those left.
  settings_.tuner_ring_from_bytes_per_rank = topology_.nccl.tuner_ring_from_bytes_per_rank;
  for (const auto& [class_name, link_class] : topology_.link_classes) {
    for (const auto& [kind, reference] : link_class.curves) {
      if (!curves_.count(reference.asset))
        throw InputError(topology_.source, reference.json_pointer,
                         "curve '" + reference.asset + "' is not in the model assets");
    }
  }
  // Calibrate on the curves of the links the model's fabric stands for: the node's main
  // intra-node class and the NIC class. (Other classes, e.g. PCIe beside NVSwitch, are carried
  // by their own stand-in curves but say nothing about this fabric.)
  std::vector<std::string> fabric_classes;
  const topology::NodeSpec& node = topology_.node;
  if (node.fabric == topology::IntraNodeFabric::kNvSwitch)
    fabric_classes.push_back(node.nvswitch_link_class);
  else if (node.fabric == topology::IntraNodeFabric::kPcie)
    fabric_classes.push_back(node.pcie_link_class);
  else if (!node.ring_link_classes.empty())
    fabric_classes.push_back(node.ring_link_classes.rbegin()->second);
  if (node.nics)
    fabric_classes.push_back(node.nics->link_class);
  const bool nic_curves_elsewhere = node.nics && !node.nics->curves_gpu_model.empty();
  std::vector<CollectiveSweep> sweeps;
  std::vector<CollectiveSweep> nic_sweeps;
  for (const auto& class_name : fabric_classes) {
    const bool nic_class = node.nics && class_name == node.nics->link_class;
    for (const auto& curve : curves_for(class_name, CollectiveKind::kAllReduce))
      (nic_class && nic_curves_elsewhere ? nic_sweeps : sweeps).push_back(sampled_sweep(curve));
  }
  // The curves were measured with NCCL's own choice; settings_ restrict the predictions only.
  // (Measured on whole nodes: every socket of a PCIe-only node in the path.)
  std::set<std::string> bridges;
  for (int gpu = 0; gpu < node.gpus; ++gpu)
    bridges.insert(node.host_bridge_of(gpu));
  const int sockets = static_cast<int>(bridges.size());
  // The PCIe path (and NCCL's transport on it) of the GPUs the in-node curves ran on.
  int measured_gpus = 1;
  for (const auto& sweep : sweeps)
    measured_gpus = std::max(measured_gpus, sweep.n_ranks / std::max(1, sweep.n_nodes));
  std::vector<int> measured_local(std::min(measured_gpus, node.gpus));
  std::iota(measured_local.begin(), measured_local.end(), 0);
  if (node.fabric == topology::IntraNodeFabric::kPcie &&
      !node.pcie_transport.curves_topology.empty()) {
    // Measured on another box: calibrate that box's fabric; its PCIe efficiency carries here.
    pcie_curves_topology_ = measured_box_topology(topology_);
    pcie_curves_calibration_ =
        calibrate_fabric(box_fabric(*pcie_curves_topology_, measured_gpus), NcclSettings{}, sweeps);
    calibration_ = pcie_curves_calibration_;
  } else {
    calibration_ = calibrate_fabric(with_pcie_path(nominal_fabric(topology_, 0, sockets), topology_,
                                                   pcie_path(topology_, measured_local)),
                                    NcclSettings{}, sweeps);
  }
  if (nic_curves_elsewhere) {
    topology::Topology measured = topology_;
    measured.node.gpu_model = node.nics->curves_gpu_model;
    if (node.nics->curves_nvlinks_per_gpu > 0)
      measured.node.nvlinks_per_gpu = node.nics->curves_nvlinks_per_gpu;
    nic_curves_calibration_ =
        calibrate_fabric(nominal_fabric(measured, 0, sockets), NcclSettings{}, nic_sweeps);
    calibration_.net_scale = nic_curves_calibration_.net_scale;
    calibration_.net_latency_scale = nic_curves_calibration_.net_latency_scale;
    nic_curves_topology_ = std::move(measured);
  }
  for (auto& group : groups)
    groups_[group.name] = std::move(group.ranks);
}

std::vector<FittedCurve> CollectiveModel::curves_for(const std::string& link_class,
                                                     CollectiveKind kind) const {
  const auto& definition = topology_.link_class(link_class);
  // A send is timed like its matching recv and vice versa.
  auto it = definition.curves.find(kind);
  if (it == definition.curves.end() && is_point_to_point(kind))
    it = definition.curves.find(kind == CollectiveKind::kSend ? CollectiveKind::kRecv
                                                              : CollectiveKind::kSend);
  if (it == definition.curves.end() && kind == CollectiveKind::kAllToAllv)
    it = definition.curves.find(CollectiveKind::kAllToAll);
  // The algorithm model carries any collective from the all-reduce curve.
  if (it == definition.curves.end())
    it = definition.curves.find(CollectiveKind::kAllReduce);
  if (it == definition.curves.end())
    throw InputError(topology_.source, definition.json_pointer + "/curves",
                     "missing curve: link class '" + link_class + "' names no curve for " +
                         std::string(collective_name(kind)));
  const topology::CurveReference& reference = it->second;
  std::vector<FittedCurve> result{
      scaled_bandwidth(curves_.at(reference.asset), reference.bandwidth_scale)};
  // Other counts are extra data: used when the assets hold them (leave-one-out assets do not).
  for (const auto& other : reference.other_counts) {
    if (curves_.count(other))
      result.push_back(scaled_bandwidth(curves_.at(other), reference.bandwidth_scale));
  }
  return result;
}

CollectivePrediction CollectiveModel::predict(CollectiveKind kind, Bytes bytes,
                                              std::span<const int> global_ranks) const {
  if (kind == CollectiveKind::kBarrier) {  // NCCL has none: frameworks all-reduce one element
    kind = CollectiveKind::kAllReduce;
    bytes = 4;
  }
  if (kind == CollectiveKind::kHierarchicalAllToAll)  // one size: node- and GPU-level alike
    return predict_hierarchical_all_to_all(bytes, bytes, global_ranks);
  CollectivePrediction prediction;
  prediction.route = topology::resolve_group(topology_, global_ranks);
  const auto& route = prediction.route;
  if (route.algorithm == topology::GroupAlgorithm::kLocal)
    return prediction;
  const std::string& link_class = route.n_nodes > 1 ? route.inter_class : route.intra_class;
  const std::vector<FittedCurve> references = curves_for(link_class, kind);
  const CommShape shape{route.n_ranks, route.n_nodes};
  const ReferenceBracket bracket = bracket_references(references, shape);
  // The reference ran on GPUs 0..g-1 of its nodes: the sockets those span.
  std::set<std::string> reference_bridges;
  std::vector<int> reference_local;
  const int reference_per_node = bracket.lower->n_ranks / std::max(1, bracket.lower->n_nodes);
  for (int gpu = 0; gpu < std::min(reference_per_node, topology_.node.gpus); ++gpu) {
    reference_bridges.insert(topology_.node.host_bridge_of(gpu));
    reference_local.push_back(gpu);
  }
  const bool carried_from_other_gpus = route.n_nodes > 1 && nic_curves_topology_.has_value();
  const bool carried_from_other_box = route.n_nodes == 1 && pcie_curves_topology_.has_value();
  const NcclFabric reference_fabric =
      carried_from_other_box ? calibrated(box_fabric(*pcie_curves_topology_, reference_per_node),
                                          pcie_curves_calibration_)
      : carried_from_other_gpus
          ? calibrated(nominal_fabric(*nic_curves_topology_, 0,
                                      static_cast<int>(reference_bridges.size())),
                       nic_curves_calibration_)
          : calibrated(with_pcie_path(
                           nominal_fabric(topology_, 0, static_cast<int>(reference_bridges.size())),
                           topology_, pcie_path(topology_, reference_local)),
                       calibration_);
  const NcclFabric fabric = group_fabric(kind, route, global_ranks);
  prediction.curve = bracket.lower->name;
  if (bracket.upper != bracket.lower && bracket.lower_weight < 1.0)
    prediction.curve += " + " + bracket.upper->name;
  prediction.nccl = nccl_estimate(kind, static_cast<double>(bytes), shape, fabric, settings_);
  prediction.duration_us = bracketed_duration_us(
      bracket, reference_fabric, kind, static_cast<double>(bytes), shape, fabric, settings_);
  prediction.region = model_region(prediction.nccl);
  prediction.spine_slowdown =
      fabric.spine_slowdown[static_cast<std::size_t>(prediction.nccl.algorithm)];
  return prediction;
}

NcclFabric CollectiveModel::group_fabric(CollectiveKind kind, const topology::GroupRoute& route,
                                         std::span<const int> global_ranks) const {
  std::set<std::string> host_bridges;
  std::set<int> local_gpus;
  for (int rank : global_ranks) {
    host_bridges.insert(topology_.node.host_bridge_of(topology_.local_gpu_of(rank)));
    local_gpus.insert(topology_.local_gpu_of(rank));
  }
  const std::vector<int> group_local(local_gpus.begin(), local_gpus.end());
  NcclFabric fabric = calibrated(
      with_pcie_path(
          nominal_fabric(topology_, route.nics_per_node, static_cast<int>(host_bridges.size())),
          topology_, pcie_path(topology_, group_local)),
      calibration_);
  if (route.n_nodes > 1)
    fabric = with_nic_transport(fabric, topology_);
  if (route.n_nodes > 1 && topology::spine_can_bind(topology_)) {
    for (const NcclAlgorithm algorithm : {NcclAlgorithm::kRing, NcclAlgorithm::kTree,
                                          NcclAlgorithm::kNvlsTree, NcclAlgorithm::kPointToPoint})
      fabric.spine_slowdown[static_cast<std::size_t>(algorithm)] =
          spine_slowdown(topology_, kind, algorithm, global_ranks);
  }
  return fabric;
}

CollectivePrediction CollectiveModel::predict_hierarchical_all_to_all(
    Bytes node_bytes, Bytes gpu_bytes, std::span<const int> global_ranks) const {
  CollectivePrediction prediction;
  prediction.route = topology::resolve_group(topology_, global_ranks);
  const auto& route = prediction.route;
  if (route.algorithm == topology::GroupAlgorithm::kLocal)
    return prediction;
  // Priced on the group's calibrated fabric directly: no curve measures DeepEP's kernels.
  const NcclFabric fabric =
      group_fabric(CollectiveKind::kHierarchicalAllToAll, route, global_ranks);
  prediction.nccl = hierarchical_all_to_all_estimate(node_bytes, gpu_bytes,
                                                     {route.n_ranks, route.n_nodes}, fabric);
  prediction.duration_us = prediction.nccl.time_us;
  prediction.region = model_region(prediction.nccl);
  prediction.spine_slowdown =
      fabric.spine_slowdown[static_cast<std::size_t>(NcclAlgorithm::kPointToPoint)];
  return prediction;
}

std::vector<int> CollectiveModel::ranks_of(const CollectiveCall& call) const {
  auto it = groups_.find(call.group);
  if (it != groups_.end() && !it->second.empty())
    return it->second;
  if (call.group.empty() || it != groups_.end()) {
    // The world: the traced job's ranks when the call says how many, else the whole cluster.
    std::vector<int> world(call.group_size > 0 ? call.group_size : topology_.world_size());
    std::iota(world.begin(), world.end(), 0);
    return world;
  }
  throw InputError(topology_.source, "process group '" + call.group + "'",
                   "the collective model was not told this group's ranks");
}

std::size_t CollectiveModel::DurationKeyHash::operator()(const DurationKey& key) const {
  std::size_t hash = std::hash<std::string>()(key.group);
  hash = hash * 31 + static_cast<std::size_t>(key.group_size);
  hash = hash * 31 + static_cast<std::size_t>(key.kind);
  hash = hash * 31 + std::hash<Bytes>()(key.gpu_bytes);
  return hash * 31 + std::hash<Bytes>()(key.bytes);
}

DurationUs CollectiveModel::collective_duration_us(const CollectiveCall& call) const {
  if (!call.comm)
    throw RuntimeFailure("collective_duration_us: call on group '" + call.group +
                         "' carries no CommInfo");
  const bool hierarchical = call.comm->kind == CollectiveKind::kHierarchicalAllToAll;
  DurationKey key{call.group, call.group_size, call.comm->kind,
                  hierarchical ? call.comm->bytes_in : model_message_bytes(*call.comm),
                  hierarchical ? call.comm->bytes_out : 0};
  {
    std::lock_guard lock(memo_->mutex);
    if (const auto found = memo_->durations.find(key); found != memo_->durations.end())
      return found->second;
  }
  const std::vector<int> ranks = ranks_of(call);
  const DurationUs duration_us =
      hierarchical ? predict_hierarchical_all_to_all(key.bytes, key.gpu_bytes, ranks).duration_us
                   : predict(key.kind, key.bytes, ranks).duration_us;
  std::lock_guard lock(memo_->mutex);
  memo_->durations.emplace(std::move(key), duration_us);
  return duration_us;
}

std::vector<PredictionPoint> predict_sweep(const CollectiveModel& model,
                                           const CollectiveSweep& sweep) {
  std::vector<int> ranks(sweep.n_ranks);
  std::iota(ranks.begin(), ranks.end(), 0);
  const auto route = topology::resolve_group(model.topology(), ranks);
  if (route.n_nodes != sweep.n_nodes)
    throw InputError(model.topology().source, "/nodes",
                     "ranks 0.." + std::to_string(sweep.n_ranks - 1) + " span " +
                         std::to_string(route.n_nodes) + " node(s) here but '" + sweep.name +
                         "' was measured on " + std::to_string(sweep.n_nodes));
  std::vector<PredictionPoint> points;
  for (const auto& sample : sweep.samples) {
    const auto prediction = model.predict(sweep.kind, sample.bytes, ranks);
    points.push_back(
        {sample.bytes, sample.in_place, sample.time_us, prediction.duration_us, prediction.region});
  }
  return points;
}

DurationUs collective_duration_us(const CollectiveModel& model, CollectiveKind kind, Bytes bytes,
                                  std::span<const int> global_ranks) {
  return model.predict(kind, bytes, global_ranks).duration_us;
}

}  // namespace perfsim::collectives
