#pragma once
// The embedding-lookup benchmark points (seed 001 Sec. IV-C: features B, E, L, D and the
// batch's 17 reuse-factor bins; seed 000 Sec. 4.3.2.1.1: T tables looked up in one batched
// kernel). A (B, E, L, D) grid per dtype, and per point one target reuse-factor histogram
// per skew: the histogram of B*L Zipf-distributed lookups (exponent 0 = uniform) that
// generate_index_batch then realises with fresh row ids.
#include <cstdint>
#include <vector>

#include "kernels/reuse_factor.hpp"
#include "perfsim/dtype.hpp"
#include "perfsim/units.hpp"

namespace perfsim::microbench {

struct EmbeddingSweepPoint {
  std::int64_t batch_size = 0;  // B
  std::int64_t table_rows = 0;  // E
  std::int64_t pooling = 0;     // L, lookups per bag
  std::int64_t dim = 0;         // D
  std::int64_t tables = 1;      // T tables of this shape in one kernel
  DType dtype = DType::kFloat32;
  double zipf_exponent = 0;
  kernels::ReuseFactors target{};  // requested histogram, shares of E
  std::uint64_t seed = 0;          // for the index batch of this point
};

struct EmbeddingSweepOptions {
  std::vector<std::int64_t> batch_sizes{512, 1024, 2048, 4096};
  std::vector<std::int64_t> table_rows{1000, 10000, 100000, 1000000, 10000000};
  std::vector<std::int64_t> poolings{1, 4, 16, 32, 64};
  std::vector<std::int64_t> dims{16, 32, 64, 128, 256};
  std::int64_t tables = 8;
  std::vector<DType> dtypes{DType::kFloat32, DType::kFloat16};
  std::vector<double> zipf_exponents{0.0, 0.8, 1.05, 1.2};
  Bytes memory_cap_bytes = Bytes{16} << 30;  // weights + gradients + indices + outputs
  std::uint64_t seed = 1;
};

// Device bytes one point needs: T tables of E x D weights (and as much again for the
// backward's gradient), T * B * L int64 indices, T * (B + 1) offsets, T * B * D outputs.
Bytes embedding_footprint_bytes(const EmbeddingSweepPoint& point);

// Points over the cap are left out. Throws InputError("<embedding sweep>", option, problem)
// for an empty or non-positive list, tables < 1 or a negative exponent.
std::vector<EmbeddingSweepPoint> embedding_sweep(const EmbeddingSweepOptions& options);

}  // namespace perfsim::microbench
