#include "validation/run_statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace perfsim::validation {
namespace {

std::vector<double> average_ranks(std::span<const double> values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return values[x] < values[y]; });
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]])
      ++j;
    const double rank = 0.5 * static_cast<double>(i + j) + 1.0;
    for (std::size_t k = i; k <= j; ++k)
      ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

}  // namespace

ErrorSummary summarize_errors(std::span<const double> signed_errors) {
  ErrorSummary summary;
  summary.count = signed_errors.size();
  if (signed_errors.empty())
    return summary;
  std::vector<double> magnitudes;
  for (double error : signed_errors) {
    magnitudes.push_back(std::abs(error));
    summary.mean_signed += error;
  }
  summary.mean_signed /= static_cast<double>(signed_errors.size());
  summary.mean_abs = std::accumulate(magnitudes.begin(), magnitudes.end(), 0.0) /
                     static_cast<double>(magnitudes.size());
  summary.max_abs = *std::max_element(magnitudes.begin(), magnitudes.end());
  std::sort(magnitudes.begin(), magnitudes.end());
  const std::size_t n = magnitudes.size();
  summary.median_abs =
      n % 2 == 1 ? magnitudes[n / 2] : 0.5 * (magnitudes[n / 2 - 1] + magnitudes[n / 2]);
  return summary;
}

double spearman(std::span<const double> a, std::span<const double> b) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (a.size() != b.size() || a.size() < 3)
    return nan;
  const std::vector<double> ra = average_ranks(a), rb = average_ranks(b);
  const double mean = (static_cast<double>(a.size()) + 1.0) / 2.0;
  double covariance = 0, variance_a = 0, variance_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    covariance += (ra[i] - mean) * (rb[i] - mean);
    variance_a += (ra[i] - mean) * (ra[i] - mean);
    variance_b += (rb[i] - mean) * (rb[i] - mean);
  }
  if (variance_a == 0 || variance_b == 0)
    return nan;
  return covariance / std::sqrt(variance_a * variance_b);
}

double pick_regret(std::span<const double> predicted, std::span<const double> measured) {
  if (predicted.empty() || predicted.size() != measured.size())
    return std::numeric_limits<double>::quiet_NaN();
  const std::size_t pick = static_cast<std::size_t>(
      std::min_element(predicted.begin(), predicted.end()) - predicted.begin());
  const double best = *std::min_element(measured.begin(), measured.end());
  return measured[pick] / best - 1.0;
}

}  // namespace perfsim::validation
