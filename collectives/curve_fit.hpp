#pragma once
// Fitting a PiecewiseSigmoidModel to a measured sweep (seed 001 Sec. IV-A), with the region
// bounds chosen automatically and a robust loss.
#include <span>
#include <string>
#include <vector>

#include "collectives/collective_sweep.hpp"
#include "collectives/piecewise_sigmoid.hpp"

namespace perfsim::collectives {

struct CurvePoint {
  double bus_bytes = 0;
  DurationUs time_us = 0;
};

struct CurveFitOptions {
  // Residuals are r = ln(predicted / measured), passed through a pseudo-Huber loss of this
  // width so that a few disturbed points (first-call warm-up, a stalled iteration) do not
  // bend the curve: points within ~10% count quadratically, farther ones about linearly.
  double robust_width = 0.1;
  // The middle region spans at least this many octaves of bus bytes.
  double min_transition_octaves = 1.0;
  int max_iterations = 100;
};

struct CurveFitResult {
  PiecewiseSigmoidModel curve;
  double cost = 0.0;             // robust cost at the optimum
  int boundary_pairs_tried = 0;  // (m1, m2) candidates
};

// Fits ts, BWmax, x0, k by Levenberg-Marquardt for every candidate pair (m1, m2) taken from the
// data's sizes (plus one octave beyond each end, so a region may be empty), keeps the best, then
// refines all six free parameters together. Initial guess per pair: ts = median time below m1
// (the smallest times when region 1 is empty), BWmax = median bus bytes / (t - ts) above m2,
// x0 = midpoint of the middle region, k = 4 / its width. Throws InputError (file = `source`)
// with fewer than 4 distinct sizes or non-positive times.
CurveFitResult fit_piecewise_sigmoid(std::span<const CurvePoint> points, const std::string& source,
                                     const CurveFitOptions& options = {});

// The points of a sweep in bus bytes (bytes x bus_factor(kind, n_ranks)).
std::vector<CurvePoint> curve_points(const CollectiveSweep& sweep);

}  // namespace perfsim::collectives
