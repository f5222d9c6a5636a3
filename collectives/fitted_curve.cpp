#include "collectives/fitted_curve.hpp"

#include "collectives/bus_factor.hpp"
#include "collectives/curve_fit.hpp"

#include <cmath>
#include <set>

namespace perfsim::collectives {

RegionErrors summarize_by_region(const std::vector<PredictionPoint>& points) {
  RegionErrors errors;
  std::vector<double> predicted;
  std::vector<double> measured;
  std::array<std::vector<double>, 3> region_predicted;
  std::array<std::vector<double>, 3> region_measured;
  for (const auto& point : points) {
    predicted.push_back(point.predicted_us);
    measured.push_back(point.measured_us);
    const auto index = static_cast<std::size_t>(point.region) - 1;
    region_predicted[index].push_back(point.predicted_us);
    region_measured[index].push_back(point.measured_us);
  }
  errors.all = summarize_errors(predicted, measured);
  for (std::size_t region = 0; region < 3; ++region)
    errors.by_region[region] = summarize_errors(region_predicted[region], region_measured[region]);
  return errors;
}

std::vector<PredictionPoint> predict_with_curve(const FittedCurve& curve,
                                                const CollectiveSweep& sweep) {
  const double factor = bus_factor(sweep.kind, sweep.n_ranks);
  std::vector<PredictionPoint> points;
  for (const auto& sample : sweep.samples) {
    const double bus_bytes = static_cast<double>(sample.bytes) * factor;
    points.push_back({sample.bytes, sample.in_place, sample.time_us,
                      curve.curve.duration_us(bus_bytes), curve.curve.region(bus_bytes)});
  }
  return points;
}

FittedCurve scaled_bandwidth(const FittedCurve& curve, double bandwidth_scale) {
  if (bandwidth_scale == 1.0)
    return curve;
  const auto& p = curve.curve.parameters();
  FittedCurve scaled = curve;
  scaled.curve = PiecewiseSigmoidModel::from_free_parameters(
      p.m1_bus_bytes * bandwidth_scale, p.m2_bus_bytes * bandwidth_scale, p.ts_us,
      p.bwmax_GBps * bandwidth_scale, p.x0 + std::log2(bandwidth_scale), p.k);
  return scaled;
}

namespace {
// Sweeps on a fine linear grid (vTrain's 1 MiB steps: 1024 sizes) would make the boundary search
// quadratic in sizes; fit them on their power-of-two sizes, the grid nccl-tests uses.
constexpr std::size_t kMaxFittedSizes = 64;

CollectiveSweep on_octave_grid(const CollectiveSweep& sweep) {
  std::set<Bytes> sizes;
  for (const auto& sample : sweep.samples)
    sizes.insert(sample.bytes);
  if (sizes.size() <= kMaxFittedSizes)
    return sweep;
  CollectiveSweep thinned = sweep;
  std::erase_if(thinned.samples, [](const CollectiveSample& sample) {
    return (sample.bytes & (sample.bytes - 1)) != 0;
  });
  return thinned.samples.size() >= 8 ? thinned : sweep;
}
}  // namespace

FittedCurve fit_sweep(const CollectiveSweep& sweep) {
  const auto points = curve_points(on_octave_grid(sweep));
  const std::string source = sweep.source_file.empty() ? sweep.name : sweep.source_file;
  FittedCurve fitted{sweep.name,
                     sweep.kind,
                     sweep.n_ranks,
                     sweep.n_nodes,
                     sweep.source_file,
                     fit_piecewise_sigmoid(points, source).curve,
                     {}};
  fitted.fit_error = summarize_by_region(predict_with_curve(fitted, sweep)).all;
  return fitted;
}

}  // namespace perfsim::collectives
