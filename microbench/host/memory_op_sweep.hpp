#pragma once
// The memory-op benchmark cases (seed 000 Sec. 4.3.2.1.2: element-wise, concat and memcpy
// kernels follow the roofline, and the largest measured bandwidth is the corrected peak; seed
// 000 Sec. 4.3.2.2 and seed 001 Sec. IV-D: transpose, layer_norm and dropout get MLP models).
// Shapes and byte counts follow kernels/memory_op_benchmark_table.hpp.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/memory_op_benchmark_table.hpp"
#include "perfsim/dtype.hpp"
#include "perfsim/units.hpp"

namespace perfsim::microbench {

struct MemoryOpCase {
  std::string op;
  DType dtype = DType::kFloat32;
  std::array<std::int64_t, 3> shape{1, 1, 1};
  Bytes bytes_read = 0;
  Bytes bytes_written = 0;
};

struct MemoryOpSweepOptions {
  std::vector<DType> dtypes{DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  std::int64_t min_elements = 1024;  // 1-D ops: min_elements, doubling, while under the cap
  std::vector<std::int64_t> concat_cols{64, 256, 1024};   // rows double from 64
  std::vector<std::int64_t> transpose_batches{1, 8, 64};  // with rows, cols below
  std::vector<std::int64_t> transpose_sizes{64, 256, 1024, 4096};
  std::vector<std::int64_t> layer_norm_hidden{256, 768, 1024, 2048, 4096, 8192};  // rows double
  Bytes memory_cap_bytes = Bytes{4} << 30;  // bytes read + written by one case
};

// The case for an op and shape, with the bytes the kernel must at least move: add reads two
// inputs; layer_norm also reads gamma and beta and writes fp32 mean and rstd per row; dropout
// also writes a one-byte mask; concat joins two [rows, cols] inputs into [rows, 2 cols].
// Throws InputError("<memory-op sweep>", op, problem) for an unknown op or a non-positive
// dimension.
MemoryOpCase memory_op_case(const std::string& op, DType dtype,
                            const std::array<std::int64_t, 3>& shape);

// Every op of kernels::kMemoryOpNames for every dtype (host copies once per dtype as well).
// Throws InputError for an empty dtype list or list option, or min_elements < 1.
std::vector<MemoryOpCase> memory_op_sweep(const MemoryOpSweepOptions& options);

}  // namespace perfsim::microbench
