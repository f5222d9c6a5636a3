#pragma once
// The GEMM shapes to measure (seed 000 Sec. 4.3.2: sizes on an almost exponential scale; seed
// 003 Sec. 4.1-4.2, Fig. 8-9: curves jump at multiples of 8 with Tensor Cores, so the sweep
// also walks every size around such points; seed 003 Sec. 4.3: one dataset per precision):
//   a log2 grid of m, n, k; random shapes, log-uniform; neighbourhoods centre - r .. centre + r
//   in one dimension at a time around multiples of 8 (the others held), including seed 003
//   Fig. 9's batched [7, 128, 1024] x [7, 1024, X]; batched GEMMs on a smaller grid.
// Each for every dtype (fp32, tf32, fp16, bf16), deduplicated, in a fixed order.
#include <cstdint>
#include <vector>

#include "perfsim/dtype.hpp"
#include "perfsim/units.hpp"

namespace perfsim::microbench {

struct GemmShape {
  std::int64_t m = 0;  // C[batch][m][n] = A[batch][m][k] B[batch][k][n]
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
  DType dtype = DType::kFloat32;
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

struct GemmSweepOptions {
  std::vector<DType> dtypes{DType::kFloat32, DType::kTFloat32, DType::kFloat16, DType::kBFloat16};
  std::int64_t grid_min = 64;  // powers of two from grid_min to grid_max, per dimension
  std::int64_t grid_max = 8192;
  int random_shapes = 200;  // per dtype, each dimension log-uniform in [random_min, random_max]
  std::int64_t random_min = 16;
  std::int64_t random_max = 8192;
  std::vector<std::int64_t> neighbourhood_centres{64, 128, 256, 512, 1024, 2048, 4096};
  std::int64_t neighbourhood_radius = 8;
  std::int64_t neighbourhood_other = 1024;  // the dimensions held while one is walked
  std::vector<std::int64_t> batch_counts{2, 8, 32};
  std::int64_t batched_grid_max = 1024;     // batched GEMMs: m, n, k powers of two up to this
  Bytes memory_cap_bytes = Bytes{8} << 30;  // A + B + C of one GEMM
  std::uint64_t seed = 1;
};

// Bytes of A, B and C of one (batched) GEMM in its dtype (tf32 is stored as fp32).
Bytes gemm_footprint_bytes(const GemmShape& shape);

// centre - radius .. centre + radius, positive values only.
std::vector<std::int64_t> multiple_of_8_neighbourhood(std::int64_t centre, std::int64_t radius);

// Throws InputError("<gemm sweep>", option, problem) for an empty dtype list, a grid bound
// that is not a positive power of two or grid_min > grid_max, a neighbourhood centre that is
// not a multiple of 8, a non-positive radius, batch count or memory cap.
std::vector<GemmShape> gemm_sweep(const GemmSweepOptions& options);

}  // namespace perfsim::microbench
