// The error summary `perfsim calibrate gemm` and `calibrate conv` print.
#include <gtest/gtest.h>

#include "kernels/accuracy.hpp"

namespace perfsim::kernels {
namespace {

TEST(RelativeErrors, MeanAbsoluteSignedAndLargest) {
  RelativeErrors errors;
  errors.add(110, 100);  // +10 %
  errors.add(90, 100);   // -10 %
  errors.add(130, 100);  // +30 %
  const RelativeErrors mean = errors.mean();
  EXPECT_EQ(mean.count, 3u);
  EXPECT_NEAR(mean.gmae, 0.5 / 3, 1e-12);
  EXPECT_NEAR(mean.mean_signed, 0.3 / 3, 1e-12);
  EXPECT_NEAR(mean.max_abs, 0.3, 1e-12);
}

TEST(RelativeErrors, NoRowsStaysZero) {
  const RelativeErrors mean = RelativeErrors{}.mean();
  EXPECT_EQ(mean.count, 0u);
  EXPECT_EQ(mean.gmae, 0);
}

}  // namespace
}  // namespace perfsim::kernels
