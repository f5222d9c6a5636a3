#pragma once
// Statistics of timed iterations, and when a warm-up may stop. Seed 003 Sec. 4.1: GPU clocks
// drift for "several hundred warm-up iterations", by more than 10%, before they settle; seed
// 003 Sec. 4.3: "a long period of warm-up to ensure the GPU clock speed converges". So a
// warm-up runs windows of iterations until consecutive window means agree.
#include <cstddef>
#include <span>

#include "perfsim/units.hpp"

namespace perfsim::microbench {

struct TimingSummary {
  std::size_t iterations = 0;
  DurationUs mean_us = 0;
  DurationUs min_us = 0;
  DurationUs p50_us = 0;
  DurationUs p95_us = 0;
  DurationUs p99_us = 0;
  DurationUs max_us = 0;
};

// Percentile q in [0, 1] of the values, linear between closest ranks (numpy's default).
// Throws RuntimeFailure for no values or q outside [0, 1].
double percentile(std::span<const double> values, double q);
// Throws RuntimeFailure for no values.
TimingSummary summarize_times(std::span<const double> times_us);

struct WarmupPolicy {
  double relative_tolerance = 0.01;  // consecutive window means within 1%
  int stable_windows = 3;            // ... this many times in a row
  int max_windows = 500;             // give up (and say so) after this many
};

class WarmupMonitor {
 public:
  explicit WarmupMonitor(WarmupPolicy policy);
  // Feeds the mean time of the window just run; returns true when warm-up may stop (settled
  // or out of windows).
  bool add_window_mean(DurationUs mean_us);
  bool settled() const { return stable_in_a_row_ >= policy_.stable_windows; }
  int windows() const { return windows_; }

 private:
  WarmupPolicy policy_;
  int windows_ = 0;
  int stable_in_a_row_ = 0;
  DurationUs previous_us_ = 0;
};

}  // namespace perfsim::microbench
