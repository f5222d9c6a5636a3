// The continuous three-region curve of seed 001 Sec. IV-A, eq. 5-7.
#include <gtest/gtest.h>

#include <cmath>

#include "collectives/fitted_curve.hpp"
#include "collectives/piecewise_sigmoid.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

PiecewiseSigmoidModel example() {
  // ts = 20 us, BWmax = 100 GB/s, regions 64 KiB .. 256 MiB of bus bytes.
  return PiecewiseSigmoidModel::from_free_parameters(65536.0, 268435456.0, 20.0, 100.0, 22.0, 0.6);
}

TEST(PiecewiseSigmoid, RegionsFollowSeed001Equation5) {
  const auto curve = example();
  // Region 1: t = ts.
  EXPECT_DOUBLE_EQ(curve.duration_us(8.0), 20.0);
  EXPECT_DOUBLE_EQ(curve.duration_us(1024.0), 20.0);
  EXPECT_EQ(curve.region(1024.0), CurveRegion::kLatency);
  // Region 3: t = ts + B / BWmax; 1 GB at 100 GB/s is 10000 us.
  EXPECT_NEAR(curve.duration_us(1e9), 20.0 + 1e4, 1e-6);
  EXPECT_EQ(curve.region(1e9), CurveRegion::kBandwidth);
  // Region 2: t = B / 10^sigmoid(log2 B), sigmoid of eq. 7.
  const double bytes = 4.0 * 1024 * 1024;
  const auto& p = curve.parameters();
  const double sigmoid = p.L / (1.0 + std::exp(-p.k * (std::log2(bytes) - p.x0))) + p.b;
  EXPECT_NEAR(curve.duration_us(bytes), bytes / (std::pow(10.0, sigmoid) * 1e3), 1e-9);
  EXPECT_EQ(curve.region(bytes), CurveRegion::kTransition);
}

TEST(PiecewiseSigmoid, ContinuousAtBothBounds) {
  const auto curve = example();
  for (double bound : {curve.parameters().m1_bus_bytes, curve.parameters().m2_bus_bytes}) {
    const double below = curve.duration_us(bound * (1.0 - 1e-9));
    const double above = curve.duration_us(bound * (1.0 + 1e-9));
    EXPECT_NEAR(below, above, 1e-6 * above) << "jump at " << bound;
  }
}

TEST(PiecewiseSigmoid, StoredParametersMustBeContinuous) {
  auto stored = example().parameters();
  EXPECT_NO_THROW(
      PiecewiseSigmoidModel::from_stored(stored, "assets.h5", "/collectives/curves row 0"));
  stored.b += 0.1;  // the original code's jump
  try {
    PiecewiseSigmoidModel::from_stored(stored, "assets.h5", "/collectives/curves row 0");
    FAIL() << "a discontinuous curve was accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "assets.h5");
    EXPECT_EQ(error.location(), "/collectives/curves row 0: L/b");
    EXPECT_NE(std::string(error.what()).find("not continuous"), std::string::npos);
  }
}

TEST(PiecewiseSigmoid, RejectsImpossibleParameters) {
  EXPECT_THROW(PiecewiseSigmoidModel::from_free_parameters(1e6, 1e3, 20, 100, 15, 1), InputError);
  EXPECT_THROW(PiecewiseSigmoidModel::from_free_parameters(1e3, 1e6, -1, 100, 15, 1), InputError);
  EXPECT_THROW(PiecewiseSigmoidModel::from_free_parameters(1e3, 1e6, 20, 0, 15, 1), InputError);
  EXPECT_THROW(PiecewiseSigmoidModel::from_free_parameters(1e3, 1e6, 20, 100, 15, 0), InputError);
}

TEST(PiecewiseSigmoid, ScaledBandwidthKeepsLatencyAndScalesBandwidth) {
  FittedCurve fitted{"x", CollectiveKind::kAllReduce, 8, 1, "", example(), {}};
  const FittedCurve half = scaled_bandwidth(fitted, 0.5);
  EXPECT_DOUBLE_EQ(half.curve.duration_us(100.0), 20.0);
  EXPECT_NEAR(half.curve.duration_us(1e10), 20.0 + 2e5, 1e-3);
  // The whole curve is the original evaluated at B / scale.
  for (double bytes : {1e4, 1e6, 3e7, 1e9})
    EXPECT_NEAR(half.curve.duration_us(bytes), fitted.curve.duration_us(bytes / 0.5),
                1e-9 * fitted.curve.duration_us(bytes / 0.5));
}

}  // namespace
}  // namespace perfsim::collectives
