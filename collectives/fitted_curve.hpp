#pragma once
// A collective curve fitted to one measured sweep, with where it came from and how well it fits
// its own data. Stored in the model-assets HDF5 (src/assets/collective_curve_assets.hpp) and
// named from topology link classes.
#include <array>
#include <map>
#include <string>
#include <vector>

#include "collectives/collective_sweep.hpp"
#include "collectives/error_metrics.hpp"
#include "collectives/piecewise_sigmoid.hpp"

namespace perfsim::collectives {

struct FittedCurve {
  std::string name;  // the sweep's name; what topology files refer to
  CollectiveKind measured_kind = CollectiveKind::kAllReduce;
  int n_ranks = 0;  // group the sweep was measured on
  int n_nodes = 1;
  std::string source_file;
  PiecewiseSigmoidModel curve;
  ErrorSummary fit_error;  // on the sweep it was fitted to
};

using CurveSet = std::map<std::string, FittedCurve>;

// The same curve on a link `bandwidth_scale` times as fast (latency unchanged): the duration of
// B bus bytes is the original's duration of B / scale.
FittedCurve scaled_bandwidth(const FittedCurve& curve, double bandwidth_scale);

// Per-point comparison of a prediction with a measurement.
struct PredictionPoint {
  Bytes bytes = 0;
  bool in_place = false;
  DurationUs measured_us = 0;
  DurationUs predicted_us = 0;
  CurveRegion region = CurveRegion::kTransition;
};

// Errors over all points and per curve region (index 0..2 = regions 1..3), seed 001 Table I.
struct RegionErrors {
  ErrorSummary all;
  std::array<ErrorSummary, 3> by_region;
};
RegionErrors summarize_by_region(const std::vector<PredictionPoint>& points);

// Fits the sweep's points (all placements together; a sweep of more than 64 sizes on its
// power-of-two sizes only) and measures the fit on all of them.
FittedCurve fit_sweep(const CollectiveSweep& sweep);

// Predicts every sample of `sweep` with `curve` alone (flat, the sweep's own group size).
std::vector<PredictionPoint> predict_with_curve(const FittedCurve& curve,
                                                const CollectiveSweep& sweep);

}  // namespace perfsim::collectives
