// Reuse-factor histogram of seed 001 Sec. IV-C (Fig. 6): per-row lookup counts binned into 17
// power-of-two bins and normalized by the table's rows.
#include "kernels/reuse_factor.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

TEST(KernelReuseFactor, BinsArePowersOfTwo) {
  EXPECT_EQ(reuse_factor_bin(0), 0u);
  EXPECT_EQ(reuse_factor_bin(1), 1u);
  EXPECT_EQ(reuse_factor_bin(2), 2u);
  EXPECT_EQ(reuse_factor_bin(3), 2u);
  EXPECT_EQ(reuse_factor_bin(4), 3u);
  EXPECT_EQ(reuse_factor_bin(7), 3u);
  EXPECT_EQ(reuse_factor_bin(8), 4u);
  EXPECT_EQ(reuse_factor_bin(16383), 14u);
  EXPECT_EQ(reuse_factor_bin(16384), 15u);
  EXPECT_EQ(reuse_factor_bin(32767), 15u);
  EXPECT_EQ(reuse_factor_bin(32768), 16u);
  EXPECT_EQ(reuse_factor_bin(1 << 20), 16u);
}

TEST(KernelReuseFactor, HistogramOfAHandMadeBatch) {
  // A table of 10 rows; the batch looks up row 3 once, row 5 twice, row 7 three times and
  // row 9 five times. Rows 0,1,2,4,6,8 are never hit.
  const std::vector<std::int64_t> indices{3, 5, 5, 7, 7, 7, 9, 9, 9, 9, 9};
  const ReuseFactors histogram = reuse_factor_histogram(indices, 10);
  EXPECT_DOUBLE_EQ(histogram[0], 0.6);  // [0, 1): 6 rows
  EXPECT_DOUBLE_EQ(histogram[1], 0.1);  // [1, 2): row 3
  EXPECT_DOUBLE_EQ(histogram[2], 0.2);  // [2, 4): rows 5 and 7
  EXPECT_DOUBLE_EQ(histogram[3], 0.1);  // [4, 8): row 9
  for (std::size_t bin = 4; bin < kReuseFactorBins; ++bin)
    EXPECT_EQ(histogram[bin], 0.0) << bin;
  EXPECT_DOUBLE_EQ(std::accumulate(histogram.begin(), histogram.end(), 0.0), 1.0);
}

TEST(KernelReuseFactor, VeryHotRowsLandInTheLastBin) {
  std::vector<std::int64_t> indices(40000, 1);
  const ReuseFactors histogram = reuse_factor_histogram(indices, 2);
  EXPECT_DOUBLE_EQ(histogram[16], 0.5);
  EXPECT_DOUBLE_EQ(histogram[0], 0.5);
}

TEST(KernelReuseFactor, RejectsIndicesOutsideTheTable) {
  const std::vector<std::int64_t> indices{0, 10};
  EXPECT_THROW(reuse_factor_histogram(indices, 10), InputError);
}

}  // namespace
}  // namespace perfsim::kernels
