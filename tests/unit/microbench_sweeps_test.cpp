// The GEMM, embedding and memory-op sweeps of microbench/ and the timing statistics the
// benchmarks report (seed 003 Sec. 4.1-4.2, Fig. 8-9: curves jump at multiples of 8, and
// clocks need a long warm-up; seed 000 Sec. 4.3.2; seed 001 Sec. IV-C).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <vector>

#include "microbench/host/embedding_sweep.hpp"
#include "microbench/host/gemm_sweep.hpp"
#include "microbench/host/memory_op_sweep.hpp"
#include "microbench/host/timing_statistics.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench {
namespace {

bool contains(const std::vector<GemmShape>& shapes, const GemmShape& shape) {
  return std::find(shapes.begin(), shapes.end(), shape) != shapes.end();
}

TEST(MicrobenchGemmSweep, IncludesEverySizeAroundMultiplesOfEight) {
  GemmSweepOptions options;
  options.grid_max = 1024;
  const auto shapes = gemm_sweep(options);
  for (DType dtype : options.dtypes) {
    for (std::int64_t centre : options.neighbourhood_centres) {
      for (std::int64_t v = centre - 8; v <= centre + 8; ++v) {
        EXPECT_TRUE(contains(shapes, {v, 1024, 1024, 1, dtype})) << v;
        EXPECT_TRUE(contains(shapes, {1024, v, 1024, 1, dtype})) << v;
        EXPECT_TRUE(contains(shapes, {1024, 1024, v, 1, dtype})) << v;
        // Seed 003 Fig. 9: [7, 128, 1024] x [7, 1024, X].
        EXPECT_TRUE(contains(shapes, {128, v, 1024, 7, dtype})) << v;
      }
    }
  }
}

TEST(MicrobenchGemmSweep, GridRandomAndBatchedShapesForEachPrecisionWithoutRepeats) {
  GemmSweepOptions options;
  options.grid_max = 512;
  options.random_shapes = 50;
  const auto shapes = gemm_sweep(options);
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, DType>> unique;
  std::set<DType> dtypes;
  int batched = 0, off_grid = 0;
  for (const GemmShape& s : shapes) {
    unique.insert({s.m, s.n, s.k, s.batch, s.dtype});
    dtypes.insert(s.dtype);
    batched += s.batch > 1 ? 1 : 0;
    const auto power = [](std::int64_t v) { return (v & (v - 1)) == 0; };
    off_grid += !power(s.m) || !power(s.n) || !power(s.k) ? 1 : 0;
  }
  EXPECT_EQ(unique.size(), shapes.size());
  EXPECT_EQ(dtypes, (std::set<DType>{DType::kFloat32, DType::kTFloat32, DType::kFloat16,
                                     DType::kBFloat16}));
  for (std::int64_t m : {64, 128, 256, 512})
    EXPECT_TRUE(contains(shapes, {m, 64, 512, 1, DType::kBFloat16}));
  EXPECT_GT(batched, 3 * 64);  // 3 batch counts x a 4^3 grid (64..512), per dtype
  EXPECT_GT(off_grid, 4 * 50);
  EXPECT_EQ(shapes, gemm_sweep(options));  // reproducible
}

TEST(MicrobenchGemmSweep, RespectsTheMemoryCapAndRejectsBadOptions) {
  GemmSweepOptions options;
  options.memory_cap_bytes = Bytes{64} << 20;
  for (const GemmShape& s : gemm_sweep(options))
    EXPECT_LE(gemm_footprint_bytes(s), options.memory_cap_bytes);
  EXPECT_EQ(gemm_footprint_bytes({8, 4, 2, 3, DType::kTFloat32}), 3 * (16 + 8 + 32) * 4);
  EXPECT_EQ(gemm_footprint_bytes({8, 4, 2, 1, DType::kFloat16}), (16 + 8 + 32) * 2);
  GemmSweepOptions bad;
  bad.neighbourhood_centres = {100};
  EXPECT_THROW(gemm_sweep(bad), InputError);
  bad = {};
  bad.grid_max = 1000;
  EXPECT_THROW(gemm_sweep(bad), InputError);
  bad = {};
  bad.dtypes.clear();
  EXPECT_THROW(gemm_sweep(bad), InputError);
}

TEST(MicrobenchEmbeddingSweep, GridPointsCarryFeasibleTargetsUnderTheCap) {
  EmbeddingSweepOptions options;
  options.batch_sizes = {256, 1024};
  options.table_rows = {1000, 100000};
  options.poolings = {1, 16};
  options.dims = {32, 128};
  options.tables = 4;
  options.memory_cap_bytes = Bytes{128} << 20;
  const auto points = embedding_sweep(options);
  // 2 dtypes x 2 B x 2 E x 2 L x 2 D x 4 skews = 128, less the 2 x 2 x 4 points of each
  // dtype with E = 100000 and D = 128, over 128 MiB (weights and gradients of 4 tables:
  // 2 x 4 x 100000 x 128 x 4 bytes = 410 MB in fp32, 205 MB in fp16).
  EXPECT_EQ(points.size(), 128u - 2 * 16);
  for (const auto& p : points) {
    EXPECT_LE(embedding_footprint_bytes(p), options.memory_cap_bytes);
    double sum = 0;
    for (double share : p.target)
      sum += share;
    EXPECT_NEAR(sum, 1.0, 1e-9);
    // The target's looked-up rows cannot exceed the lookups.
    EXPECT_LE((1.0 - p.target[0]) * static_cast<double>(p.table_rows),
              static_cast<double>(p.batch_size * p.pooling) + 1e-6);
  }
  // More skew, fewer distinct rows (more of the table untouched).
  const auto untouched = [&](double exponent) {
    for (const auto& p : points)
      if (p.batch_size == 1024 && p.table_rows == 1000 && p.pooling == 16 &&
          p.zipf_exponent == exponent)
        return p.target[0];
    return -1.0;
  };
  EXPECT_LT(untouched(0.0), untouched(1.2));
}

TEST(MicrobenchMemoryOpSweep, EveryOpEveryDtypeWithinTheCap) {
  MemoryOpSweepOptions options;
  options.memory_cap_bytes = Bytes{16} << 20;
  const auto cases = memory_op_sweep(options);
  std::set<std::pair<std::string, DType>> seen;
  for (const auto& c : cases) {
    seen.insert({c.op, c.dtype});
    EXPECT_LE(c.bytes_read + c.bytes_written, options.memory_cap_bytes) << c.op;
  }
  EXPECT_EQ(seen.size(), kernels::kMemoryOpNames.size() * options.dtypes.size());
  // Element-wise sizes start at 1024 elements and double: add reads two inputs.
  const auto add = memory_op_case("add", DType::kFloat16, {1024, 1, 1});
  EXPECT_EQ(add.bytes_read, 4096);
  EXPECT_EQ(add.bytes_written, 2048);
  const auto norm = memory_op_case("layer_norm", DType::kFloat32, {64, 1024, 1});
  EXPECT_EQ(norm.bytes_read, 64 * 1024 * 4 + 2 * 1024 * 4);
  EXPECT_EQ(norm.bytes_written, 64 * 1024 * 4 + 64 * 8);
  EXPECT_THROW(memory_op_case("softmax", DType::kFloat32, {1, 1, 1}), InputError);
  EXPECT_THROW(memory_op_case("add", DType::kFloat32, {0, 1, 1}), InputError);
}

TEST(MicrobenchTimingStatistics, PercentilesInterpolateBetweenRanks) {
  const std::vector<double> times{5, 1, 4, 2, 3};
  const TimingSummary s = summarize_times(times);
  EXPECT_EQ(s.iterations, 5u);
  EXPECT_DOUBLE_EQ(s.mean_us, 3);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.p50_us, 3);
  EXPECT_DOUBLE_EQ(s.p95_us, 4.8);  // position 0.95 * 4 = 3.8
  EXPECT_DOUBLE_EQ(s.max_us, 5);
  EXPECT_THROW(summarize_times({}), RuntimeFailure);
  EXPECT_THROW(percentile(times, 1.5), RuntimeFailure);
}

TEST(MicrobenchTimingStatistics, WarmupWaitsForSettledClocks) {
  // Seed 003 Fig. 7: times drift up as clocks fall, then settle.
  WarmupMonitor monitor({0.01, 3, 100});
  const std::vector<double> drifting{100, 104, 107, 109, 110, 110.5, 110.4, 110.6};
  std::size_t stopped_after = 0;
  for (double mean : drifting) {
    ++stopped_after;
    if (monitor.add_window_mean(mean))
      break;
  }
  EXPECT_TRUE(monitor.settled());
  EXPECT_EQ(stopped_after, 7u);  // 109 -> 110 -> 110.5 -> 110.4: three steps within 1%
  WarmupMonitor never({0.01, 3, 4});
  EXPECT_FALSE(never.add_window_mean(1));
  EXPECT_FALSE(never.add_window_mean(2));
  EXPECT_FALSE(never.add_window_mean(4));
  EXPECT_TRUE(never.add_window_mean(8));  // out of windows, not settled
  EXPECT_FALSE(never.settled());
}

}  // namespace
}  // namespace perfsim::microbench
