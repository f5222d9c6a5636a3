#pragma once
// Prediction error as seed 001 Table I reports it: GMAE (geometric mean of the absolute
// relative errors) and MAPE (their arithmetic mean), both in percent.
#include <cstddef>
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

// The relative errors (predicted / measured - 1) of a kernel table as `perfsim calibrate`
// reports them: mean absolute ("gmae" in the calibration tables), mean signed, largest.
struct RelativeErrors {
  std::size_t count = 0;
  double gmae = 0;         // mean |predicted / measured - 1|
  double mean_signed = 0;  // mean (predicted / measured - 1)
  double max_abs = 0;

  // Sums one row in; call mean() once every row is in.
  void add(double predicted, double measured);
  RelativeErrors mean() const;
};

}  // namespace perfsim::kernels
