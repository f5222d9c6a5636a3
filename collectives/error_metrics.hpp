#pragma once
// Prediction-error statistics of seed 001 Table I: per point the relative error
// e = |predicted - measured| / measured; GMAE = geometric mean of e, MAPE = arithmetic mean of e,
// std = standard deviation of e. All returned as fractions (0.05 = 5%).
#include <cstddef>
#include <span>

namespace perfsim::collectives {

struct ErrorSummary {
  double gmae = 0.0;
  double mape = 0.0;
  double stddev = 0.0;
  double max = 0.0;
  std::size_t count = 0;
};

// An exact prediction (e = 0) would send the geometric mean to zero; such errors count as
// kGmaeFloor (1e-6) instead. Throws RuntimeFailure when the spans differ in length or a
// measured value is not positive. An empty input gives count 0 and zeros.
inline constexpr double kGmaeFloor = 1e-6;
ErrorSummary summarize_errors(std::span<const double> predicted, std::span<const double> measured);

}  // namespace perfsim::collectives
