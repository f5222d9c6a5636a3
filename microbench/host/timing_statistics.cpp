#include "microbench/host/timing_statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "perfsim/error.hpp"

namespace perfsim::microbench {

double percentile(std::span<const double> values, double q) {
  if (values.empty())
    throw RuntimeFailure("percentile: no values");
  if (!(q >= 0 && q <= 1))
    throw RuntimeFailure("percentile: q = " + std::to_string(q) + " outside [0, 1]");
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

TimingSummary summarize_times(std::span<const double> times_us) {
  if (times_us.empty())
    throw RuntimeFailure("summarize_times: no timed iterations");
  TimingSummary summary;
  summary.iterations = times_us.size();
  summary.mean_us =
      std::accumulate(times_us.begin(), times_us.end(), 0.0) / static_cast<double>(times_us.size());
  const auto [low, high] = std::minmax_element(times_us.begin(), times_us.end());
  summary.min_us = *low;
  summary.max_us = *high;
  summary.p50_us = percentile(times_us, 0.50);
  summary.p95_us = percentile(times_us, 0.95);
  summary.p99_us = percentile(times_us, 0.99);
  return summary;
}

WarmupMonitor::WarmupMonitor(WarmupPolicy policy) : policy_(policy) {
  if (policy_.stable_windows < 1 || policy_.max_windows < 1 || !(policy_.relative_tolerance > 0))
    throw RuntimeFailure(
        "WarmupMonitor: stable_windows and max_windows must be at least 1 "
        "and the tolerance positive");
}

bool WarmupMonitor::add_window_mean(DurationUs mean_us) {
  ++windows_;
  if (windows_ > 1 && previous_us_ > 0 &&
      std::abs(mean_us - previous_us_) <= policy_.relative_tolerance * previous_us_)
    ++stable_in_a_row_;
  else
    stable_in_a_row_ = 0;
  previous_us_ = mean_us;
  return settled() || windows_ >= policy_.max_windows;
}

}  // namespace perfsim::microbench
