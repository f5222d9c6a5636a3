#include "kernels/uniform_reuse_factors.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

// Poisson mass beyond mean +- 12 standard deviations (+ 30) is far below a double's epsilon
// relative to the bins that matter.
constexpr double kTailSigmas = 12;
constexpr double kTailSlack = 30;

}  // namespace

ReuseFactors uniform_reuse_factors(double lookups, std::int64_t table_rows) {
  if (table_rows <= 0 || !(lookups >= 0))
    throw RuntimeFailure("uniform_reuse_factors: need table_rows > 0 and lookups >= 0, got " +
                         std::to_string(table_rows) + " and " + std::to_string(lookups));
  ReuseFactors histogram{};
  const double mean = lookups / static_cast<double>(table_rows);
  if (mean == 0) {
    histogram[0] = 1;
    return histogram;
  }
  const double spread = kTailSigmas * std::sqrt(mean) + kTailSlack;
  const auto first = static_cast<std::int64_t>(std::max(0.0, std::floor(mean - spread)));
  const auto last = static_cast<std::int64_t>(std::ceil(mean + spread));
  const double log_mean = std::log(mean);
  double total = 0;
  for (std::int64_t count = first; count <= last; ++count) {
    const double k = static_cast<double>(count);
    const double probability = std::exp(k * log_mean - mean - std::lgamma(k + 1));
    histogram[reuse_factor_bin(count)] += probability;
    total += probability;
  }
  for (double& share : histogram)
    share /= total;
  return histogram;
}

}  // namespace perfsim::kernels
