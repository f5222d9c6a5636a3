#include "kernels/accuracy.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "perfsim/error.hpp"

namespace perfsim::kernels {

Accuracy prediction_accuracy(std::span<const double> predicted, std::span<const double> measured) {
  if (predicted.size() != measured.size() || measured.empty())
    throw RuntimeFailure("prediction_accuracy: " + std::to_string(predicted.size()) +
                         " predictions for " + std::to_string(measured.size()) + " measurements");
  constexpr double kSmallestError = 1e-9;
  double log_sum = 0;
  double sum = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    if (!(measured[i] > 0))
      throw RuntimeFailure("prediction_accuracy: measurement " + std::to_string(i) +
                           " is not positive");
    const double error = std::abs(predicted[i] - measured[i]) / measured[i];
    log_sum += std::log(std::max(error, kSmallestError));
    sum += error;
  }
  const double count = static_cast<double>(measured.size());
  return {100.0 * std::exp(log_sum / count), 100.0 * sum / count, measured.size()};
}

void RelativeErrors::add(double predicted, double measured) {
  const double error = predicted / measured - 1.0;
  gmae += std::abs(error);
  mean_signed += error;
  max_abs = std::max(max_abs, std::abs(error));
  ++count;
}

RelativeErrors RelativeErrors::mean() const {
  RelativeErrors out = *this;
  if (count > 0) {
    out.gmae /= static_cast<double>(count);
    out.mean_signed /= static_cast<double>(count);
  }
  return out;
}

}  // namespace perfsim::kernels
