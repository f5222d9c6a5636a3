#include "collectives/curve_transfer.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "collectives/bus_factor.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

CommShape shape_of(const CollectiveSweep& sweep) {
  return {sweep.n_ranks, sweep.n_nodes};
}
CommShape shape_of(const FittedCurve& curve) {
  return {curve.n_ranks, curve.n_nodes};
}

// The fastest measured time at a size (placements and repeats folded).
std::map<Bytes, DurationUs> fastest_by_size(const CollectiveSweep& sweep) {
  std::map<Bytes, DurationUs> fastest;
  for (const auto& sample : sweep.samples) {
    auto [it, inserted] = fastest.emplace(sample.bytes, sample.time_us);
    if (!inserted)
      it->second = std::min(it->second, sample.time_us);
  }
  return fastest;
}

double model_us(const NcclFabric& nominal, const FabricCalibration& calibration,
                const NcclSettings& settings, const CollectiveSweep& sweep, double bytes) {
  return nccl_estimate(sweep.kind, bytes, shape_of(sweep), calibrated(nominal, calibration),
                       settings)
      .time_us;
}

using CalibrationFactor = double FabricCalibration::*;

bool is_all_to_all(CollectiveKind kind) {
  return kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kAllToAllv;
}

// Scales the factor among `factors` that binds at `bytes` so that the model meets `measured_us`;
// returns whether it scaled one (false: latency-bound there, or none of them binds).
bool calibrate_bandwidth(const NcclFabric& nominal, const NcclSettings& settings,
                         const CollectiveSweep& sweep, double bytes, DurationUs measured_us,
                         std::span<const CalibrationFactor> factors,
                         FabricCalibration& calibration) {
  bool scaled = false;
  for (int iteration = 0; iteration < 4; ++iteration) {
    const double base_us = model_us(nominal, calibration, settings, sweep, bytes);
    double best_elasticity = 0.0;
    double FabricCalibration::*binding = nullptr;
    for (auto factor : factors) {
      FabricCalibration nudged = calibration;
      nudged.*factor *= 1.01;
      const double elasticity =
          std::log(base_us / model_us(nominal, nudged, settings, sweep, bytes)) / std::log(1.01);
      if (elasticity > best_elasticity) {
        best_elasticity = elasticity;
        binding = factor;
      }
    }
    if (!binding || best_elasticity < 0.2)
      return scaled;  // latency-bound even at the largest size: nothing to learn about bandwidth
    calibration.*binding *= std::pow(base_us / measured_us, 1.0 / best_elasticity);
    // A NIC cannot beat its line rate: a sweep that seems to (a stand-in measured on other
    // hardware, or the wrong term judged binding) leaves the network at nominal; and the trees
    // reach a fraction of the ring's rate, never more.
    calibration.net_scale = std::min(calibration.net_scale, 1.0);
    calibration.tree_net_scale =
        std::min(calibration.tree_net_scale, 1.0 / nominal.tree_net_efficiency);
    scaled = true;
  }
  return scaled;
}

void calibrate_latency(const NcclFabric& nominal, const NcclSettings& settings,
                       const CollectiveSweep& sweep, double bytes, DurationUs measured_us,
                       FabricCalibration& calibration) {
  if (is_all_to_all(sweep.kind)) {
    // All-to-all posts one message per peer, one after another: its small-size cost grows with
    // the peers on other nodes (the model's time is linear in the per-peer term, slope n - ppn).
    const double remote_peers = sweep.n_ranks - sweep.n_ranks / sweep.n_nodes;
    const double base_us = model_us(nominal, calibration, settings, sweep, bytes);
    calibration.peer_latency_us =
        std::max(0.0, calibration.peer_latency_us + (measured_us - base_us) / remote_peers);
    return;
  }
  for (int iteration = 0; iteration < 4; ++iteration) {
    const double base_us = model_us(nominal, calibration, settings, sweep, bytes);
    FabricCalibration nudged = calibration;
    nudged.net_latency_scale *= 1.1;
    const double slope_us = (model_us(nominal, nudged, settings, sweep, bytes) - base_us) /
                            (0.1 * calibration.net_latency_scale);
    if (!(slope_us > 1e-9))
      return;
    calibration.net_latency_scale =
        std::clamp(calibration.net_latency_scale + (measured_us - base_us) / slope_us, 0.2, 5.0);
  }
}

// Under a tuner plugin that keeps all-reduce across nodes off the ring below a boundary
// (NcclSettings::tuner_ring_from_bytes_per_rank), one sweep over more than two nodes measures
// two network rates: the ring's above the boundary and the trees' below it. The trees' share of
// the network rate (NcclFabric::tree_net_efficiency) is then set by the rule calibrate_bandwidth
// applies to the other factors, at the largest size the tuner runs on the trees. Returns whether
// it was (the trees bound the time there); without such a tuner NCCL's own choice runs one
// algorithm at the large sizes and the two rates cannot be told apart.
bool calibrate_tree_efficiency(const NcclFabric& nominal, const NcclSettings& settings,
                               const CollectiveSweep& sweep,
                               const std::map<Bytes, DurationUs>& fastest,
                               FabricCalibration& calibration) {
  if (!(settings.tuner_ring_from_bytes_per_rank > 0.0) ||
      sweep.kind != CollectiveKind::kAllReduce || sweep.n_nodes <= 2)
    return false;
  auto below = fastest.lower_bound(
      static_cast<Bytes>(std::ceil(settings.tuner_ring_from_bytes_per_rank * sweep.n_ranks)));
  if (below == fastest.begin())
    return false;
  --below;
  static constexpr CalibrationFactor kTrees[] = {&FabricCalibration::tree_net_scale};
  return calibrate_bandwidth(nominal, settings, sweep, static_cast<double>(below->first),
                             below->second, kTrees, calibration);
}

// Whether two settings let NCCL choose among the same algorithms and protocols by the same rules.
bool same_choice_rules(const NcclSettings& a, const NcclSettings& b) {
  return a.algorithms == b.algorithms && a.protocols == b.protocols &&
         a.tuner_ring_from_bytes_per_rank == b.tuner_ring_from_bytes_per_rank &&
         a.min_ctas == b.min_ctas && a.max_ctas == b.max_ctas;
}

}  // namespace

NcclSettings without_tuner(NcclSettings settings) {
  settings.tuner_ring_from_bytes_per_rank = 0.0;
  return settings;
}

CollectiveSweep without_tuner_step(CollectiveSweep sweep, const NcclFabric& fabric,
                                   const NcclSettings& settings) {
  const NcclSettings own_choice = without_tuner(settings);
  const CommShape shape = shape_of(sweep);
  for (auto& sample : sweep.samples) {
    const double bytes = static_cast<double>(sample.bytes);
    sample.time_us *= nccl_estimate(sweep.kind, bytes, shape, fabric, own_choice).time_us /
                      nccl_estimate(sweep.kind, bytes, shape, fabric, settings).time_us;
  }
  return sweep;
}

DurationUs carried_duration_us(const FittedCurve& reference, const NcclFabric& reference_fabric,
                               CollectiveKind kind, double bytes, const CommShape& shape,
                               const NcclFabric& fabric, const NcclSettings& settings,
                               const NcclSettings& reference_settings) {
  const double measured_us =
      reference.curve.duration_us(bytes * bus_factor(reference.measured_kind, reference.n_ranks));
  // The measurement itself only when the run is the measured one: same collective, shape and
  // fabric, and NCCL choosing by the same rules (a run with NCCL_ALGO=ring on the shape of a
  // sweep that ran NVLS-tree is not that sweep: it is carried by the model like any other).
  if (kind == reference.measured_kind && shape.n_ranks == reference.n_ranks &&
      shape.n_nodes == reference.n_nodes &&
      fabric.net_busbw_GBps == reference_fabric.net_busbw_GBps &&
      fabric.generation == reference_fabric.generation &&
      same_choice_rules(settings, reference_settings))
    return measured_us;
  const double target_us = nccl_estimate(kind, bytes, shape, fabric, settings).time_us;
  const double reference_us = nccl_estimate(reference.measured_kind, bytes, shape_of(reference),
                                            reference_fabric, reference_settings)
                                  .time_us;
  return measured_us * target_us / reference_us;
}

CollectiveSweep sampled_sweep(const FittedCurve& curve) {
  CollectiveSweep sweep;
  sweep.name = curve.name;
  sweep.source_file = curve.source_file;
  sweep.kind = curve.measured_kind;
  sweep.n_ranks = curve.n_ranks;
  sweep.n_nodes = curve.n_nodes;
  const double factor = bus_factor(curve.measured_kind, curve.n_ranks);
  for (int power = 3; power <= 34; ++power) {
    const Bytes bytes = Bytes{1} << power;
    sweep.samples.push_back(
        {bytes, curve.curve.duration_us(static_cast<double>(bytes) * factor), 0.0, 0.0, false});
  }
  return sweep;
}

CurveRegion model_region(const NcclEstimate& estimate) {
  const double transfer_share =
      estimate.time_us > 0.0 ? 1.0 - estimate.latency_us / estimate.time_us : 0.0;
  return transfer_share < 0.2   ? CurveRegion::kLatency
         : transfer_share > 0.8 ? CurveRegion::kBandwidth
                                : CurveRegion::kTransition;
}

FabricCalibration calibrate_fabric(const NcclFabric& nominal, const NcclSettings& settings,
                                   std::span<const CollectiveSweep> sweeps) {
  std::vector<const CollectiveSweep*> ordered;
  for (const auto& sweep : sweeps)
    ordered.push_back(&sweep);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto* a, const auto* b) { return a->n_nodes < b->n_nodes; });
  FabricCalibration calibration;
  bool in_node_measured = false;
  for (const CollectiveSweep* sweep : ordered) {
    if (!calibration.source.empty())
      calibration.source += ", ";
    calibration.source += sweep->name;
    const auto fastest = fastest_by_size(*sweep);
    if (fastest.empty() || sweep->n_ranks < 2)
      continue;
    const auto& [largest_bytes, largest_us] = *fastest.rbegin();
    // NVLink terms belong to in-node measurements when there are any: a multi-node sweep then
    // only speaks for the network (else a stand-in NIC curve would rewrite NVLS).
    static constexpr CalibrationFactor kAll[] = {&FabricCalibration::intra_scale,
                                                 &FabricCalibration::nvls_scale,
                                                 &FabricCalibration::net_scale};
    static constexpr CalibrationFactor kNetwork[] = {&FabricCalibration::net_scale};
    const bool network_only = sweep->n_nodes > 1 && in_node_measured;
    const auto bandwidth = [&] {
      calibrate_bandwidth(nominal, settings, *sweep, static_cast<double>(largest_bytes), largest_us,
                          network_only ? std::span<const CalibrationFactor>(kNetwork)
                                       : std::span<const CalibrationFactor>(kAll),
                          calibration);
    };
    bandwidth();
    // The trees' rate, then the largest size again: with slower trees the tuner's own choice
    // there may move from a tree to the ring.
    if (calibrate_tree_efficiency(nominal, settings, *sweep, fastest, calibration)) {
      bandwidth();
      calibrate_tree_efficiency(nominal, settings, *sweep, fastest, calibration);
    }
    in_node_measured |= sweep->n_nodes == 1;
    if (sweep->n_nodes > 1) {
      // The median of the four smallest sizes' fastest times: latency, robust to a warm-up.
      std::vector<std::pair<Bytes, DurationUs>> smallest(fastest.begin(), fastest.end());
      smallest.resize(std::min<std::size_t>(4, smallest.size()));
      std::sort(smallest.begin(), smallest.end(),
                [](const auto& a, const auto& b) { return a.second < b.second; });
      const auto& median = smallest[smallest.size() / 2];
      calibrate_latency(nominal, settings, *sweep, static_cast<double>(median.first), median.second,
                        calibration);
      if (is_all_to_all(sweep->kind)) {
        // The per-peer term also weighs at the largest size: once more, both.
        bandwidth();
        calibrate_latency(nominal, settings, *sweep, static_cast<double>(median.first),
                          median.second, calibration);
      }
    }
  }
  return calibration;
}

CurveTransfer::CurveTransfer(NcclFabric fabric, NcclSettings settings,
                             std::vector<FittedCurve> references)
    : fabric_(std::move(fabric)),
      settings_(std::move(settings)),
      references_(std::move(references)) {
  if (references_.empty())
    throw RuntimeFailure("CurveTransfer: no reference curves");
}

CurveTransfer::CurveTransfer(NcclFabric fabric, NcclSettings settings,
                             std::vector<FittedCurve> references,
                             std::vector<NcclFabric> reference_fabrics,
                             NcclSettings reference_settings)
    : CurveTransfer(std::move(fabric), std::move(settings), std::move(references)) {
  if (reference_fabrics.size() != references_.size())
    throw RuntimeFailure("CurveTransfer: one fabric per reference curve expected");
  reference_fabrics_ = std::move(reference_fabrics);
  reference_settings_ = std::move(reference_settings);
}

ReferenceBracket bracket_references(std::span<const FittedCurve> references,
                                    const CommShape& shape) {
  if (references.empty())
    throw RuntimeFailure("bracket_references: no reference curves");
  const bool across_nodes = shape.n_nodes > 1;
  std::vector<const FittedCurve*> pool;
  for (const auto& reference : references) {
    if ((reference.n_nodes > 1) == across_nodes)
      pool.push_back(&reference);
  }
  // Inside a node the GPU count is the axis; across nodes the node count (ranks per node equal
  // when possible).
  const auto count = [&](const FittedCurve& curve) {
    return static_cast<double>(across_nodes ? curve.n_nodes : curve.n_ranks);
  };
  if (across_nodes) {
    std::vector<const FittedCurve*> same_density;
    for (const auto* reference : pool) {
      if (reference->n_ranks / reference->n_nodes == shape.ranks_per_node())
        same_density.push_back(reference);
    }
    if (!same_density.empty())
      pool = same_density;
  }
  if (pool.empty()) {
    for (const auto& reference : references)
      pool.push_back(&reference);
  }
  const double target = across_nodes ? shape.n_nodes : shape.n_ranks;
  ReferenceBracket result;
  for (const auto* reference : pool) {
    const double value = count(*reference);
    if (value <= target && (!result.lower || value > count(*result.lower)))
      result.lower = reference;
    if (value >= target && (!result.upper || value < count(*result.upper)))
      result.upper = reference;
  }
  if (!result.lower || !result.upper) {
    // One side only: the nearest there is (in log count).
    const FittedCurve* nearest = nullptr;
    for (const auto* reference : pool) {
      if (!nearest || std::abs(std::log(count(*reference) / target)) <
                          std::abs(std::log(count(*nearest) / target)))
        nearest = reference;
    }
    return {nearest, nearest, 1.0};
  }
  const double low = count(*result.lower);
  const double high = count(*result.upper);
  result.lower_weight = high > low ? std::log(high / target) / std::log(high / low) : 1.0;
  return result;
}

DurationUs bracketed_duration_us(const ReferenceBracket& bracket,
                                 const NcclFabric& reference_fabric, CollectiveKind kind,
                                 double bytes, const CommShape& shape, const NcclFabric& fabric,
                                 const NcclSettings& settings,
                                 const NcclSettings& reference_settings) {
  const double lower_us = carried_duration_us(*bracket.lower, reference_fabric, kind, bytes, shape,
                                              fabric, settings, reference_settings);
  if (bracket.lower == bracket.upper || bracket.lower_weight >= 1.0)
    return lower_us;
  const double upper_us = carried_duration_us(*bracket.upper, reference_fabric, kind, bytes, shape,
                                              fabric, settings, reference_settings);
  return std::exp(bracket.lower_weight * std::log(lower_us) +
                  (1.0 - bracket.lower_weight) * std::log(upper_us));
}

DurationUs CurveTransfer::duration_us(CollectiveKind kind, double bytes,
                                      const CommShape& shape) const {
  if (shape.n_ranks <= 1 || kind == CollectiveKind::kBarrier)
    return kind == CollectiveKind::kBarrier && shape.n_ranks > 1
               ? nccl_estimate(CollectiveKind::kAllReduce, 8.0, shape, fabric_, settings_).time_us
               : 0.0;
  const ReferenceBracket bracket = bracket_references(references_, shape);
  if (reference_fabrics_.empty())
    return bracketed_duration_us(bracket, fabric_, kind, bytes, shape, fabric_, settings_,
                                 reference_settings_);
  const auto carried_us = [&](const FittedCurve* reference) {
    const NcclFabric& own = reference_fabrics_[reference - references_.data()];
    return carried_duration_us(*reference, own, kind, bytes, shape, own, settings_,
                               reference_settings_);
  };
  const double lower_us = carried_us(bracket.lower);
  if (bracket.lower == bracket.upper || bracket.lower_weight >= 1.0)
    return lower_us;
  return std::exp(bracket.lower_weight * std::log(lower_us) +
                  (1.0 - bracket.lower_weight) * std::log(carried_us(bracket.upper)));
}

std::vector<std::string> CurveTransfer::references_for(const CommShape& shape) const {
  const ReferenceBracket chosen = bracket_references(references_, shape);
  std::vector<std::string> names{chosen.lower->name};
  if (chosen.upper != chosen.lower && chosen.lower_weight < 1.0)
    names.push_back(chosen.upper->name);
  return names;
}

std::vector<PredictionPoint> predict_sweep(const CurveTransfer& transfer,
                                           const CollectiveSweep& sweep) {
  std::vector<PredictionPoint> points;
  const CommShape shape = shape_of(sweep);
  for (const auto& sample : sweep.samples) {
    const double bytes = static_cast<double>(sample.bytes);
    PredictionPoint point{sample.bytes, sample.in_place, sample.time_us,
                          transfer.duration_us(sweep.kind, bytes, shape), CurveRegion::kTransition};
    // Region by the model's split of the time: latency-bound below 20% transfer time,
    // bandwidth-bound above 80%.
    const auto estimate =
        nccl_estimate(sweep.kind, bytes, shape, transfer.fabric(), transfer.settings());
    const double transfer_share =
        estimate.time_us > 0.0 ? 1.0 - estimate.latency_us / estimate.time_us : 0.0;
    point.region = transfer_share < 0.2   ? CurveRegion::kLatency
                   : transfer_share > 0.8 ? CurveRegion::kBandwidth
                                          : CurveRegion::kTransition;
    points.push_back(point);
  }
  return points;
}

HeldOutResult predict_held_out(const NcclFabric& nominal, const NcclSettings& settings,
                               std::span<const CollectiveSweep> training,
                               const CollectiveSweep& target,
                               const NcclSettings& training_settings) {
  for (const auto& sweep : training) {
    if (sweep.name == target.name)
      throw RuntimeFailure("predict_held_out: '" + target.name + "' is also a training sweep");
  }
  if (training.empty())
    throw RuntimeFailure("predict_held_out: no training sweep for '" + target.name + "'");
  // `training_settings` describe how the training sweeps ran, `settings` the target's run.
  const FabricCalibration calibration = calibrate_fabric(nominal, training_settings, training);
  std::vector<NcclFabric> reference_fabrics;
  for (const auto& reference : training) {
    if (reference.n_nodes <= 1) {
      reference_fabrics.push_back(calibrated(nominal, calibration));
      continue;
    }
    std::vector<CollectiveSweep> up_to_reference;
    for (const auto& sweep : training) {
      if (sweep.n_nodes < reference.n_nodes)
        up_to_reference.push_back(sweep);
    }
    up_to_reference.push_back(reference);
    reference_fabrics.push_back(
        calibrated(nominal, calibrate_fabric(nominal, training_settings, up_to_reference)));
  }
  // A tuner plugin's choice is a step in the measured sweep that a smooth curve would blur
  // across the sizes around it; the curves are fitted with the step taken out (each sweep on
  // its own fabric) and the model puts it back at the target's rank count.
  const NcclSettings reference_settings = without_tuner(training_settings);
  std::vector<FittedCurve> references;
  for (std::size_t i = 0; i < training.size(); ++i)
    references.push_back(
        fit_sweep(without_tuner_step(training[i], reference_fabrics[i], training_settings)));
  const CurveTransfer transfer(calibrated(nominal, calibration), settings, std::move(references),
                               std::move(reference_fabrics), reference_settings);
  return {target.name,
          target.kind,
          target.n_ranks,
          target.n_nodes,
          transfer.references_for(shape_of(target)),
          predict_sweep(transfer, target)};
}

std::vector<HeldOutResult> leave_one_out(const NcclFabric& nominal, const NcclSettings& settings,
                                         std::span<const CollectiveSweep> sweeps,
                                         std::span<const std::string> held_out,
                                         const NcclSettings& training_settings) {
  std::vector<HeldOutResult> results;
  for (const auto& name : held_out) {
    const auto target =
        std::find_if(sweeps.begin(), sweeps.end(),
                     [&](const CollectiveSweep& sweep) { return sweep.name == name; });
    if (target == sweeps.end())
      throw RuntimeFailure("leave_one_out: no sweep named '" + name + "'");
    std::vector<CollectiveSweep> others;
    for (const auto& sweep : sweeps) {
      if (sweep.name != name)
        others.push_back(sweep);
    }
    results.push_back(predict_held_out(nominal, settings, others, *target, training_settings));
  }
  return results;
}

}  // namespace perfsim::collectives
