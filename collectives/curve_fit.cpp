#include "collectives/curve_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "collectives/bus_factor.hpp"
#include "collectives/levenberg_marquardt.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

constexpr double kBusBytesPerGBpsUs = kBytesPerGB / kUsPerSecond;
constexpr double kCentreMarginOctaves = 8.0;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

double pseudo_huber(double residual, double width) {
  const double scaled = residual / width;
  const double loss = 2.0 * (std::sqrt(1.0 + scaled * scaled) - 1.0);
  return std::copysign(width * std::sqrt(loss), residual);
}

// Parameter vector: [ln ts, ln BWmax, x0, ln k] and optionally [x1, x2] (log2 of m1, m2).
std::optional<PiecewiseSigmoidModel> build(const Eigen::VectorXd& p, double x1, double x2) {
  if (p.size() == 6) {
    x1 = p[4];
    x2 = p[5];
  }
  if (!(x2 > x1) || !std::isfinite(x1) || !std::isfinite(x2))
    return std::nullopt;
  // A sigmoid centred far outside the middle region only uses its exponential tail, with
  // L and b growing huge and cancelling; keep the centre within reach of the region.
  if (p[2] < x1 - kCentreMarginOctaves || p[2] > x2 + kCentreMarginOctaves)
    return std::nullopt;
  try {
    return PiecewiseSigmoidModel::from_free_parameters(std::exp2(x1), std::exp2(x2), std::exp(p[0]),
                                                       std::exp(p[1]), p[2], std::exp(p[3]));
  } catch (const InputError&) {
    return std::nullopt;
  }
}

struct Candidate {
  Eigen::VectorXd parameters;
  double x1 = 0;
  double x2 = 0;
  double cost = std::numeric_limits<double>::infinity();
};

Eigen::VectorXd initial_guess(std::span<const CurvePoint> points, double x1, double x2) {
  std::vector<double> small_times;
  for (const auto& point : points) {
    if (std::log2(point.bus_bytes) <= x1)
      small_times.push_back(point.time_us);
  }
  if (small_times.empty()) {
    for (std::size_t i = 0; i < std::min<std::size_t>(3, points.size()); ++i)
      small_times.push_back(points[i].time_us);
  }
  const double ts = median(small_times);
  std::vector<double> bandwidths;
  double best_bandwidth = 0.0;
  for (const auto& point : points) {
    const double bandwidth = point.bus_bytes / (point.time_us * kBusBytesPerGBpsUs);
    best_bandwidth = std::max(best_bandwidth, bandwidth);
    if (std::log2(point.bus_bytes) >= x2 && point.time_us > 1.5 * ts)
      bandwidths.push_back(point.bus_bytes / ((point.time_us - ts) * kBusBytesPerGBpsUs));
  }
  const double bwmax = bandwidths.empty() ? 1.05 * best_bandwidth : median(bandwidths);
  Eigen::VectorXd p(4);
  p << std::log(ts), std::log(std::max(bwmax, 1e-6)), 0.5 * (x1 + x2), std::log(4.0 / (x2 - x1));
  return p;
}

}  // namespace

std::vector<CurvePoint> curve_points(const CollectiveSweep& sweep) {
  const double factor = bus_factor(sweep.kind, sweep.n_ranks);
  std::vector<CurvePoint> points;
  points.reserve(sweep.samples.size());
  for (const auto& sample : sweep.samples)
    points.push_back({static_cast<double>(sample.bytes) * factor, sample.time_us});
  std::sort(points.begin(), points.end(),
            [](const CurvePoint& a, const CurvePoint& b) { return a.bus_bytes < b.bus_bytes; });
  return points;
}

CurveFitResult fit_piecewise_sigmoid(std::span<const CurvePoint> input, const std::string& source,
                                     const CurveFitOptions& options) {
  std::vector<CurvePoint> points(input.begin(), input.end());
  std::sort(points.begin(), points.end(),
            [](const CurvePoint& a, const CurvePoint& b) { return a.bus_bytes < b.bus_bytes; });
  std::vector<double> sizes;
  for (const auto& point : points) {
    if (!(point.time_us > 0.0) || !(point.bus_bytes > 0.0))
      throw InputError(source, "size " + std::to_string(point.bus_bytes) + " bus bytes",
                       "time and size must be positive to fit a curve");
    const double x = std::log2(point.bus_bytes);
    if (sizes.empty() || x > sizes.back() + 1e-9)
      sizes.push_back(x);
  }
  if (sizes.size() < 4)
    throw InputError(source, "samples",
                     "need at least 4 distinct message sizes to fit a curve, got " +
                         std::to_string(sizes.size()));

  const int count = static_cast<int>(points.size());
  const auto residual_function = [&](double x1, double x2) {
    return [&, x1, x2](const Eigen::VectorXd& p, Eigen::VectorXd& residuals) {
      const auto curve = build(p, x1, x2);
      if (!curve)
        return false;
      for (int i = 0; i < count; ++i) {
        const double predicted = curve->duration_us(points[i].bus_bytes);
        residuals[i] = pseudo_huber(std::log(predicted / points[i].time_us), options.robust_width);
      }
      return true;
    };
  };

  std::vector<double> bounds;
  bounds.push_back(sizes.front() - 1.0);
  bounds.insert(bounds.end(), sizes.begin(), sizes.end());
  bounds.push_back(sizes.back() + 1.0);

  LevenbergMarquardtOptions lm_options;
  lm_options.max_iterations = options.max_iterations;
  Candidate best;
  int tried = 0;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    for (std::size_t j = i + 1; j < bounds.size(); ++j) {
      const double x1 = bounds[i];
      const double x2 = bounds[j];
      if (x2 - x1 < options.min_transition_octaves)
        continue;
      ++tried;
      const Eigen::VectorXd start = initial_guess(points, x1, x2);
      const auto residuals = residual_function(x1, x2);
      Eigen::VectorXd scratch(count);
      if (!residuals(start, scratch))
        continue;
      const auto result = levenberg_marquardt(residuals, start, count, lm_options);
      if (result.cost < best.cost)
        best = {result.parameters, x1, x2, result.cost};
    }
  }
  if (!std::isfinite(best.cost))
    throw InputError(source, "samples", "no region bounds gave a valid curve");

  // Let the bounds move off the data grid together with the shape parameters.
  Eigen::VectorXd joint(6);
  joint << best.parameters, best.x1, best.x2;
  const auto joint_residuals = residual_function(0.0, 0.0);
  const auto refined = levenberg_marquardt(joint_residuals, joint, count, lm_options);
  CurveFitResult result{*build(best.parameters, best.x1, best.x2), best.cost, tried};
  if (refined.cost < best.cost) {
    if (auto curve = build(refined.parameters, 0.0, 0.0)) {
      result.curve = *curve;
      result.cost = refined.cost;
    }
  }
  return result;
}

}  // namespace perfsim::collectives
