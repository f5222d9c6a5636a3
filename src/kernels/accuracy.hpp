#pragma once
// Prediction error as seed 001 Table I reports it: GMAE (geometric mean of the absolute
// relative errors) and MAPE (their arithmetic mean), both in percent.
#include <span>

namespace perfsim::kernels {

struct Accuracy {
  double gmae_pct = 0;
  double mape_pct = 0;
  std::size_t samples = 0;
};

// Throws RuntimeFailure when the spans differ in length, are empty, or a measured value is
// not positive. An exact prediction counts as a 1e-9 relative error in the geometric mean.
Accuracy prediction_accuracy(std::span<const double> predicted, std::span<const double> measured);

}  // namespace perfsim::kernels
