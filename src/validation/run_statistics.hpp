#pragma once
// Error statistics of predicted against measured run times, and the two figures that say
// whether a simulator ranks layouts of one job correctly: Spearman's rank correlation and the
// regret of its pick.
#include <span>
#include <string>
#include <vector>

namespace perfsim::validation {

struct ErrorSummary {
  std::size_t count = 0;
  double mean_abs = 0;  // fractions, not percent
  double median_abs = 0;
  double max_abs = 0;
  double mean_signed = 0;
};

// Over signed relative errors (predicted / measured - 1).
ErrorSummary summarize_errors(std::span<const double> signed_errors);

// Spearman's rho with average ranks for ties; NaN when fewer than 3 values or one side has
// no spread.
double spearman(std::span<const double> a, std::span<const double> b);

// measured time of the run with the smallest predicted time / smallest measured time - 1.
double pick_regret(std::span<const double> predicted, std::span<const double> measured);

}  // namespace perfsim::validation
