// Error summaries, Spearman's rho and pick regret (validation/run_statistics.hpp), and the
// end-to-end calibration fit (validation/end_to_end_calibration.hpp), on hand-computed cases.
#include <gtest/gtest.h>

#include <algorithm>
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

// Rows whose simulation is linear in the host costs with row-specific weights: the fit must
// find the costs and the per-iteration term that generated the measurements.
TEST(EndToEndCalibration, RecoversGeneratingParameters) {
  const CalibrationAxes& axes = calibration_axes();
  const CalibrationPoint truth{.host_us_per_forward_op = axes.per_op_us.at(5),
                               .host_us_per_backward_op = axes.per_op_us.at(5),
                               .host_us_per_collective = axes.per_collective_us.at(3),
                               .host_us_per_micro_batch = axes.per_micro_batch_us.at(7)};
  const double iteration = 1500.0;
  struct Row {
    double base, ops, collectives, batches;
  };
  std::vector<Row> rows;
  for (int i = 0; i < 24; ++i)
    rows.push_back({20'000.0 + 3'000.0 * i, 400.0 + 150.0 * (i % 5), 20.0 + 35.0 * (i % 3),
                    static_cast<double>(1 << (i % 4))});
  auto simulated = [&](std::size_t i, const CalibrationPoint& point) {
    const Row& row = rows[i];
    return row.base + row.ops * point.host_us_per_forward_op +
           row.collectives * point.host_us_per_collective +
           row.batches * point.host_us_per_micro_batch;
  };
  std::vector<double> measured;
  for (std::size_t i = 0; i < rows.size(); ++i)
    measured.push_back(simulated(i, truth) + iteration);
  const EndToEndCalibration fitted = fit_calibration(measured, simulated, 2);
  EXPECT_DOUBLE_EQ(fitted.host.host_us_per_forward_op, truth.host_us_per_forward_op);
  EXPECT_DOUBLE_EQ(fitted.host.host_us_per_backward_op, truth.host_us_per_forward_op);
  EXPECT_DOUBLE_EQ(fitted.host.host_us_per_collective, truth.host_us_per_collective);
  EXPECT_DOUBLE_EQ(fitted.host.host_us_per_micro_batch, truth.host_us_per_micro_batch);
  EXPECT_NEAR(fitted.iteration_us, iteration, 1e-6);
  EXPECT_NEAR(fitted.fit_mean_abs_error, 0.0, 1e-12);
  EXPECT_EQ(fitted.fitted_rows, rows.size());
}

// Rows whose op count and micro-batch count rise together: time per op and time per
// micro-batch trade against each other, so from zero cost the error falls along a valley no
// single axis follows. The fit must still reach the generating costs.
TEST(EndToEndCalibration, FollowsValleyBetweenCorrelatedCosts) {
  const CalibrationAxes& axes = calibration_axes();
  const CalibrationPoint truth{.host_us_per_forward_op = axes.per_op_us.at(10),
                               .host_us_per_backward_op = axes.per_op_us.at(10),
                               .host_us_per_micro_batch = axes.per_micro_batch_us.at(8)};
  struct Row {
    double base, ops, batches;
  };
  std::vector<Row> rows;
  for (int i = 0; i < 20; ++i) {
    const double batches = 1 + i % 8;
    rows.push_back({10'000.0 + 500.0 * i, 100.0 * batches + 3.0 * (i % 3), batches});
  }
  auto simulated = [&](std::size_t i, const CalibrationPoint& point) {
    const Row& row = rows[i];
    return row.base + row.ops * point.host_us_per_forward_op +
           row.batches * point.host_us_per_micro_batch;
  };
  std::vector<double> measured;
  for (std::size_t i = 0; i < rows.size(); ++i)
    measured.push_back(simulated(i, truth));
  const EndToEndCalibration fitted = fit_calibration(measured, simulated, 2);
  EXPECT_DOUBLE_EQ(fitted.host.host_us_per_forward_op, truth.host_us_per_forward_op);
  EXPECT_DOUBLE_EQ(fitted.host.host_us_per_micro_batch, truth.host_us_per_micro_batch);
  EXPECT_NEAR(fitted.fit_mean_abs_error, 0.0, 1e-12);
}

TEST(EndToEndCalibration, IterationTermNeverNegative) {
  const std::vector<double> measured{100.0};
  const EndToEndCalibration fitted =
      fit_calibration(measured, [](std::size_t, const CalibrationPoint&) { return 150.0; });
  EXPECT_GE(fitted.iteration_us, 0.0);
}

TEST(EndToEndCalibration, JsonRoundTripAndErrors) {
  EndToEndCalibration calibration;
  calibration.host = {.host_us_per_forward_op = 12.5,
                      .host_us_per_backward_op = 12.5,
                      .host_us_per_collective = 40,
                      .host_us_per_micro_batch = 750,
                      .gemm_time_scale = 1.12};
  calibration.device = "A100-80GB";
  calibration.iteration_us = 3000;
  calibration.fitted_on = "runs.csv";
  calibration.fitted_rows = 7;
  const EndToEndCalibration back = parse_calibration(calibration_json(calibration), "c.json");
  EXPECT_DOUBLE_EQ(back.host.host_us_per_forward_op, 12.5);
  EXPECT_DOUBLE_EQ(back.host.host_us_per_backward_op, 12.5);
  EXPECT_DOUBLE_EQ(back.host.host_us_per_collective, 40);
  EXPECT_DOUBLE_EQ(back.host.host_us_per_micro_batch, 750);
  EXPECT_DOUBLE_EQ(back.iteration_us, 3000);
  EXPECT_DOUBLE_EQ(back.host.gemm_time_scale, 1.12);
  EXPECT_EQ(back.device, "A100-80GB");
  EXPECT_EQ(back.fitted_on, "runs.csv");
  EXPECT_EQ(back.fitted_rows, 7u);
  EXPECT_THROW(parse_calibration("{", "c.json"), InputError);
  EXPECT_THROW(parse_calibration(R"({"schema":"other"})", "c.json"), InputError);
  EXPECT_THROW(
      parse_calibration(
          R"({"schema":"perfsim-llm-calibration/1","host_us_per_op":-1,"host_us_per_collective":0,"host_us_per_micro_batch":0,"iteration_us":0})",
          "c.json"),
      InputError);
  EXPECT_THROW(
      parse_calibration(
          R"({"schema":"perfsim-llm-calibration/1","host_us_per_op":"x","host_us_per_collective":0,"host_us_per_micro_batch":0,"iteration_us":0})",
          "c.json"),
      InputError);
  // A scale is a property of one device's kernels: without the device it cannot be applied.
  EXPECT_THROW(
      parse_calibration(
          R"({"schema":"perfsim-llm-calibration/1","host_us_per_op":0,"host_us_per_collective":0,"host_us_per_micro_batch":0,"iteration_us":0,"gemm_time_scale":1.2})",
          "c.json"),
      InputError);
  EXPECT_THROW(
      parse_calibration(
          R"({"schema":"perfsim-llm-calibration/1","host_us_per_op":0,"host_us_per_collective":0,"host_us_per_micro_batch":0,"iteration_us":0,"gemm_time_scale":50,"device":"x"})",
          "c.json"),
      InputError);
  // Files written before the scale existed load with scale 1 and no device.
  const EndToEndCalibration old = parse_calibration(
      R"({"schema":"perfsim-llm-calibration/1","host_us_per_op":5,"host_us_per_collective":0,"host_us_per_micro_batch":0,"iteration_us":0})",
      "c.json");
  EXPECT_DOUBLE_EQ(old.host.gemm_time_scale, 1.0);
  EXPECT_TRUE(old.device.empty());
  // One host_us_per_op (every file written before the split) is the cost of every op.
  EXPECT_DOUBLE_EQ(old.host.host_us_per_forward_op, 5);
  EXPECT_DOUBLE_EQ(old.host.host_us_per_backward_op, 5);
}

// A forward and a backward cost that differ are written as the pair and read back; one cost
// for both is written as host_us_per_op, so such files stay as before. Giving both forms, or
// half the pair, is an error.
TEST(EndToEndCalibration, BackwardCostJson) {
  EndToEndCalibration calibration;
  calibration.host.host_us_per_forward_op = 60;
  calibration.host.host_us_per_backward_op = 22.5;
  calibration.fitted_on = "runs.csv";
  const std::string text = calibration_json(calibration);
  EXPECT_EQ(text.find("\"host_us_per_op\""), std::string::npos);
  const EndToEndCalibration back = parse_calibration(text, "c.json");
  EXPECT_DOUBLE_EQ(back.host.host_us_per_forward_op, 60);
  EXPECT_DOUBLE_EQ(back.host.host_us_per_backward_op, 22.5);
  calibration.host.host_us_per_backward_op = 60;
  const std::string single = calibration_json(calibration);
  EXPECT_NE(single.find("\"host_us_per_op\": 60"), std::string::npos);
  EXPECT_EQ(single.find("host_us_per_forward_op"), std::string::npos);
  EXPECT_THROW(
      parse_calibration(
          R"({"schema":"perfsim-llm-calibration/1","host_us_per_op":5,"host_us_per_forward_op":5,"host_us_per_backward_op":2,"host_us_per_collective":0,"host_us_per_micro_batch":0,"iteration_us":0})",
          "c.json"),
      InputError);
  EXPECT_THROW(
      parse_calibration(
          R"({"schema":"perfsim-llm-calibration/1","host_us_per_forward_op":5,"host_us_per_collective":0,"host_us_per_micro_batch":0,"iteration_us":0})",
          "c.json"),
      InputError);
}

// Rows with GEMM time and host time in different proportions: the fit must separate a GEMM
// time scale from a host cost per op, and leave the scale at 1 unless asked to fit it.
TEST(EndToEndCalibration, RecoversGemmTimeScale) {
  const CalibrationAxes& axes = calibration_axes();
  const double true_scale = axes.gemm_time_scale.at(17);  // 1.14
  const double true_per_op = axes.per_op_us.at(6);
  struct Row {
    double gemm_us, ops;
  };
  std::vector<Row> rows;
  for (int i = 0; i < 30; ++i)
    rows.push_back({5'000.0 + 9'000.0 * (i % 6), 100.0 + 300.0 * (i % 5)});
  // GPU and CPU overlap: the slower of the two sets the time, as in the engine.
  auto simulated = [&](std::size_t i, const CalibrationPoint& point) {
    const Row& row = rows[i];
    return std::max(row.gemm_us * point.gemm_time_scale, row.ops * point.host_us_per_forward_op) +
           800.0;
  };
  CalibrationPoint truth;
  truth.host_us_per_forward_op = true_per_op;
  truth.host_us_per_backward_op = true_per_op;
  truth.gemm_time_scale = true_scale;
  std::vector<double> measured;
  for (std::size_t i = 0; i < rows.size(); ++i)
    measured.push_back(simulated(i, truth));
  const EndToEndCalibration fitted =
      fit_calibration(measured, simulated, 2, {.gemm_time_scale = true});
  EXPECT_DOUBLE_EQ(fitted.host.gemm_time_scale, true_scale);
  EXPECT_DOUBLE_EQ(fitted.host.host_us_per_forward_op, true_per_op);
  EXPECT_NEAR(fitted.fit_mean_abs_error, 0.0, 1e-12);
  const EndToEndCalibration host_only = fit_calibration(measured, simulated, 2);
  EXPECT_DOUBLE_EQ(host_only.host.gemm_time_scale, 1.0);
  EXPECT_GT(host_only.fit_mean_abs_error, 0.01);
}

// Rows with forward and backward ops in different proportions (full recompute runs the
// forward twice) and GPU time that hides the host on some: the fit must separate the per
// backward op cost from the per forward op cost when asked to, and keep one cost for both
// unless asked.
TEST(EndToEndCalibration, RecoversBackwardOverForwardCost) {
  const CalibrationAxes& axes = calibration_axes();
  const double forward_us = axes.per_op_us.at(14);  // 56
  ASSERT_NE(std::find(axes.backward_over_forward.begin(), axes.backward_over_forward.end(), 0.5),
            axes.backward_over_forward.end());
  const CalibrationPoint truth{.host_us_per_forward_op = forward_us,
                               .host_us_per_backward_op = 0.5 * forward_us,
                               .host_us_per_micro_batch = axes.per_micro_batch_us.at(19)};
  struct Row {
    double gpu_us, forward_ops, backward_ops, batches;
  };
  std::vector<Row> rows;
  for (int i = 0; i < 30; ++i) {
    const double batches = 1 + i % 4, layers = 12 + 4 * (i % 3), recompute = i % 2;
    rows.push_back({2'000.0 * layers * batches * (1 + i % 5) / 3,
                    30 * layers * batches * (1 + recompute), 27 * layers * batches, batches});
  }
  auto simulated = [&](std::size_t i, const CalibrationPoint& point) {
    const Row& row = rows[i];
    const double host = row.forward_ops * point.host_us_per_forward_op +
                        row.backward_ops * point.host_us_per_backward_op;
    return std::max(row.gpu_us, host) + row.batches * point.host_us_per_micro_batch;
  };
  std::vector<double> measured;
  for (std::size_t i = 0; i < rows.size(); ++i)
    measured.push_back(simulated(i, truth));
  const EndToEndCalibration fitted =
      fit_calibration(measured, simulated, 2, {.backward_over_forward = true});
  EXPECT_DOUBLE_EQ(fitted.host.host_us_per_forward_op, truth.host_us_per_forward_op);
  EXPECT_DOUBLE_EQ(fitted.host.host_us_per_backward_op, truth.host_us_per_backward_op);
  EXPECT_DOUBLE_EQ(fitted.host.host_us_per_micro_batch, truth.host_us_per_micro_batch);
  EXPECT_NEAR(fitted.fit_mean_abs_error, 0.0, 1e-12);
  const EndToEndCalibration one_cost = fit_calibration(measured, simulated, 2);
  EXPECT_DOUBLE_EQ(one_cost.host.host_us_per_forward_op, one_cost.host.host_us_per_backward_op);
  EXPECT_GT(one_cost.fit_mean_abs_error, 0.01);
}

}  // namespace
}  // namespace perfsim::validation
