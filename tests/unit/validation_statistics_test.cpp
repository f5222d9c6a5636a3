// Error summaries, Spearman's rho and pick regret (validation/run_statistics.hpp), and the
// end-to-end calibration fit (validation/end_to_end_calibration.hpp), on hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "perfsim/error.hpp"
#include "validation/end_to_end_calibration.hpp"
#include "validation/run_statistics.hpp"

namespace perfsim::validation {
namespace {

TEST(RunStatistics, ErrorSummary) {
  const std::vector<double> errors = {0.1, -0.2, 0.05, -0.05};
  const ErrorSummary summary = summarize_errors(errors);
  EXPECT_EQ(summary.count, 4u);
  EXPECT_NEAR(summary.mean_abs, 0.1, 1e-12);
  EXPECT_NEAR(summary.median_abs, 0.075, 1e-12);
  EXPECT_NEAR(summary.max_abs, 0.2, 1e-12);
  EXPECT_NEAR(summary.mean_signed, -0.025, 1e-12);
}

TEST(RunStatistics, SpearmanOnRanks) {
  const std::vector<double> measured = {1, 2, 3, 4, 5};
  EXPECT_NEAR(spearman(std::vector<double>{10, 20, 30, 40, 50}, measured), 1.0, 1e-12);
  EXPECT_NEAR(spearman(std::vector<double>{5, 4, 3, 2, 1}, measured), -1.0, 1e-12);
  // One swap of neighbours among five: rho = 1 - 6 * 2 / (5 * 24) = 0.9.
  EXPECT_NEAR(spearman(std::vector<double>{1, 3, 2, 4, 5}, measured), 0.9, 1e-12);
  // Ties take average ranks: predicted ranks 1.5, 1.5, 3 against 1, 2, 3.
  EXPECT_NEAR(spearman(std::vector<double>{7, 7, 9}, std::vector<double>{1, 2, 3}), std::sqrt(0.75),
              1e-12);
  EXPECT_TRUE(std::isnan(spearman(std::vector<double>{1, 2}, std::vector<double>{1, 2})));
  EXPECT_TRUE(std::isnan(spearman(std::vector<double>{1, 1, 1}, std::vector<double>{1, 2, 3})));
}

TEST(RunStatistics, RegretOfThePick) {
  // perfsim ranks the second run first; it measured 12 against the best 10.
  EXPECT_NEAR(pick_regret(std::vector<double>{5, 4, 6}, std::vector<double>{10, 12, 11}), 0.2,
              1e-12);
  EXPECT_NEAR(pick_regret(std::vector<double>{4, 5}, std::vector<double>{10, 12}), 0.0, 1e-12);
}

// Samples whose simulation at grid point g is base + ops * per_op(g) + batches * per_batch(g):
// the fit must find the host costs and the per-iteration term that generated the measurements.
TEST(EndToEndCalibration, RecoversGeneratingParameters) {
  const std::vector<HostCostPoint>& grid = host_cost_grid();
  const HostCostPoint truth = grid.at(grid.size() / 3);
  const double iteration = 1500.0;
  std::vector<CalibrationSample> samples;
  for (int i = 0; i < 24; ++i) {
    const double base = 20'000.0 + 3'000.0 * i, ops = 400.0 + 150.0 * (i % 5);
    const double batches = 1 << (i % 4);
    auto simulated = [&](const HostCostPoint& point) {
      return base + ops * point.host_us_per_op + batches * point.host_us_per_micro_batch;
    };
    CalibrationSample sample;
    sample.measured_us = simulated(truth) + iteration;
    for (const HostCostPoint& point : grid)
      sample.simulated_us_by_grid.push_back(simulated(point));
    samples.push_back(sample);
  }
  const EndToEndCalibration fitted = fit_calibration(samples);
  EXPECT_DOUBLE_EQ(fitted.host_us_per_op, truth.host_us_per_op);
  EXPECT_DOUBLE_EQ(fitted.host_us_per_micro_batch, truth.host_us_per_micro_batch);
  EXPECT_NEAR(fitted.iteration_us, iteration, 1e-6);
  EXPECT_NEAR(fitted.fit_mean_abs_error, 0.0, 1e-12);
  EXPECT_EQ(fitted.fitted_rows, samples.size());
  EXPECT_NEAR(calibrated_us(samples[3], fitted), samples[3].measured_us, 1e-6);
}

TEST(EndToEndCalibration, IterationTermNeverNegative) {
  CalibrationSample sample;
  sample.measured_us = 100;
  sample.simulated_us_by_grid.assign(host_cost_grid().size(), 150.0);
  const EndToEndCalibration fitted = fit_calibration(std::vector<CalibrationSample>{sample});
  EXPECT_GE(fitted.iteration_us, 0.0);
}

TEST(EndToEndCalibration, JsonRoundTripAndErrors) {
  EndToEndCalibration calibration;
  calibration.host_us_per_op = 12.5;
  calibration.host_us_per_micro_batch = 750;
  calibration.iteration_us = 3000;
  calibration.fitted_on = "runs.csv";
  calibration.fitted_rows = 7;
  const EndToEndCalibration back = parse_calibration(calibration_json(calibration), "c.json");
  EXPECT_DOUBLE_EQ(back.host_us_per_op, 12.5);
  EXPECT_DOUBLE_EQ(back.host_us_per_micro_batch, 750);
  EXPECT_DOUBLE_EQ(back.iteration_us, 3000);
  EXPECT_EQ(back.fitted_on, "runs.csv");
  EXPECT_EQ(back.fitted_rows, 7u);
  EXPECT_THROW(parse_calibration("{", "c.json"), InputError);
  EXPECT_THROW(parse_calibration(R"({"schema":"other"})", "c.json"), InputError);
  EXPECT_THROW(
      parse_calibration(
          R"({"schema":"perfsim-llm-calibration/1","host_us_per_op":-1,"host_us_per_micro_batch":0,"iteration_us":0})",
          "c.json"),
      InputError);
  EXPECT_THROW(
      parse_calibration(
          R"({"schema":"perfsim-llm-calibration/1","host_us_per_op":"x","host_us_per_micro_batch":0,"iteration_us":0})",
          "c.json"),
      InputError);
}

}  // namespace
}  // namespace perfsim::validation
