#include "collectives/error_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "perfsim/error.hpp"

namespace perfsim::collectives {

ErrorSummary summarize_errors(std::span<const double> predicted, std::span<const double> measured) {
  if (predicted.size() != measured.size())
    throw RuntimeFailure("summarize_errors: " + std::to_string(predicted.size()) +
                         " predictions for " + std::to_string(measured.size()) + " measurements");
  ErrorSummary summary;
  summary.count = measured.size();
  if (measured.empty())
    return summary;
  double log_sum = 0.0;
  double sum = 0.0;
  double square_sum = 0.0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    if (!(measured[i] > 0.0))
      throw RuntimeFailure("summarize_errors: measured value " + std::to_string(measured[i]) +
                           " at point " + std::to_string(i) + " is not positive");
    const double error = std::abs(predicted[i] - measured[i]) / measured[i];
    log_sum += std::log(std::max(error, kGmaeFloor));
    sum += error;
    square_sum += error * error;
    summary.max = std::max(summary.max, error);
  }
  const double n = static_cast<double>(measured.size());
  summary.gmae = std::exp(log_sum / n);
  summary.mape = sum / n;
  summary.stddev = std::sqrt(std::max(0.0, square_sum / n - summary.mape * summary.mape));
  return summary;
}

}  // namespace perfsim::collectives
