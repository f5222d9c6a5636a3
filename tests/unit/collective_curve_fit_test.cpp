// Levenberg-Marquardt fitting of the piecewise sigmoid and the error metrics of seed 001 Table I.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "collectives/curve_fit.hpp"
#include "collectives/error_metrics.hpp"
#include "collectives/levenberg_marquardt.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

TEST(LevenbergMarquardt, FitsAnExponentialDecay) {
  std::vector<double> x, y;
  for (int i = 0; i < 20; ++i) {
    x.push_back(i * 0.25);
    y.push_back(3.0 * std::exp(-0.7 * x.back()) + 0.5);
  }
  const auto residuals = [&](const Eigen::VectorXd& p, Eigen::VectorXd& r) {
    for (std::size_t i = 0; i < x.size(); ++i)
      r[i] = p[0] * std::exp(-p[1] * x[i]) + p[2] - y[i];
    return true;
  };
  Eigen::VectorXd start(3);
  start << 1.0, 0.1, 0.0;
  const auto result = levenberg_marquardt(residuals, start, static_cast<int>(x.size()));
  EXPECT_NEAR(result.parameters[0], 3.0, 1e-5);
  EXPECT_NEAR(result.parameters[1], 0.7, 1e-5);
  EXPECT_NEAR(result.parameters[2], 0.5, 1e-5);
}

TEST(CurveFit, RecoversAKnownCurve) {
  const auto truth =
      PiecewiseSigmoidModel::from_free_parameters(32768.0, 1.0e8, 30.0, 200.0, 21.0, 0.5);
  std::vector<CurvePoint> points;
  for (int power = 3; power <= 33; ++power) {
    const double bytes = std::exp2(power);
    // +-1% alternating noise so the fit cannot be exact.
    const double noise = power % 2 == 0 ? 1.01 : 0.99;
    points.push_back({bytes, truth.duration_us(bytes) * noise});
  }
  const auto result = fit_piecewise_sigmoid(points, "synthetic");
  for (int power = 3; power <= 33; ++power) {
    const double bytes = std::exp2(power);
    EXPECT_NEAR(result.curve.duration_us(bytes) / truth.duration_us(bytes), 1.0, 0.03)
        << "at 2^" << power << " bytes";
  }
  EXPECT_NEAR(result.curve.parameters().ts_us, 30.0, 1.0);
  EXPECT_NEAR(result.curve.parameters().bwmax_GBps, 200.0, 10.0);
  EXPECT_GT(result.boundary_pairs_tried, 100);
}

TEST(CurveFit, IgnoresAnIsolatedOutlier) {
  const auto truth =
      PiecewiseSigmoidModel::from_free_parameters(32768.0, 1.0e8, 30.0, 200.0, 21.0, 0.5);
  std::vector<CurvePoint> points;
  for (int power = 3; power <= 33; ++power)
    points.push_back({std::exp2(power), truth.duration_us(std::exp2(power))});
  points[0].time_us *= 3.0;  // a first-call warm-up like the 8-byte row of the H100 logs
  const auto result = fit_piecewise_sigmoid(points, "synthetic");
  EXPECT_NEAR(result.curve.parameters().ts_us, 30.0, 1.5);
}

TEST(CurveFit, NeedsFourSizes) {
  const std::vector<CurvePoint> points{{8, 10}, {16, 10}, {32, 11}};
  EXPECT_THROW(fit_piecewise_sigmoid(points, "tiny.txt"), InputError);
}

TEST(ErrorMetrics, Seed001TableIDefinitions) {
  // Relative errors 10%, 40%, 1%: MAPE = 17%, GMAE = (0.1*0.4*0.01)^(1/3) = 7.368%.
  const std::vector<double> measured{100.0, 50.0, 200.0};
  const std::vector<double> predicted{110.0, 30.0, 202.0};
  const auto summary = summarize_errors(predicted, measured);
  EXPECT_EQ(summary.count, 3u);
  EXPECT_NEAR(summary.mape, 0.17, 1e-12);
  EXPECT_NEAR(summary.gmae, std::cbrt(0.1 * 0.4 * 0.01), 1e-12);
  EXPECT_NEAR(summary.max, 0.4, 1e-12);
  EXPECT_NEAR(summary.stddev, std::sqrt((0.01 + 0.16 + 0.0001) / 3 - 0.17 * 0.17), 1e-12);
  EXPECT_THROW(summarize_errors(predicted, std::vector<double>{1.0}), RuntimeFailure);
}

}  // namespace
}  // namespace perfsim::collectives
