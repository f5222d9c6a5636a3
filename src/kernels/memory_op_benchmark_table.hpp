#pragma once
// The memory-op table of a benchmark HDF5 file (element-wise, copy, concat, transpose,
// layer_norm, dropout kernels; seed 000 Sec. 4.3.2.1.2 verifies the roofline against it and
// takes its largest bandwidth as the corrected peak; seed 001 Sec. IV-D trains layer_norm and
// dropout models on it). src/hdf5/column_table.hpp layout:
//   group /benchmarks/memory_op
//     op              string   "add", "gelu", "copy", "memcpy_h2d", "memcpy_d2h", "concat",
//                              "transpose", "layer_norm", "dropout" (kMemoryOpNames)
//     dtype           string   element dtype (perfsim::parse_dtype)
//     dim0, dim1, dim2 int64   the shape, leading dimensions first, 1 where unused:
//                              element-wise and copies [elements, 1, 1]; concat of two
//                              [rows, cols] tensors along cols [rows, cols, 1]; transpose of
//                              [batch, rows, cols] into [batch, cols, rows]; layer_norm of
//                              [rows, hidden]; dropout of [elements, 1, 1]
//     bytes_read, bytes_written int64  units "bytes": what the kernel must move at least
//     time_us         float64  units "us": mean kernel time
//     bandwidth_GBps  float64  units "GBps": (bytes_read + bytes_written) / time
//   attributes: kind = "memory_op", device, source (required), software and optional more
//   (benchmark_data/benchmark_schema.hpp).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "benchmark_data/benchmark_schema.hpp"
#include "perfsim/dtype.hpp"
#include "perfsim/units.hpp"

namespace perfsim::kernels {

inline constexpr const char* kMemoryOpBenchmarkGroup = "/benchmarks/memory_op";
inline constexpr std::array<const char*, 9> kMemoryOpNames = {
    "add",    "gelu",      "copy",       "memcpy_h2d", "memcpy_d2h",
    "concat", "transpose", "layer_norm", "dropout"};

struct MemoryOpSample {
  std::string op;
  DType dtype = DType::kFloat32;
  std::array<std::int64_t, 3> shape{1, 1, 1};
  Bytes bytes_read = 0;
  Bytes bytes_written = 0;
  DurationUs time_us = 0;
};

struct MemoryOpBenchmark {
  std::string device;
  std::string source;
  std::vector<MemoryOpSample> samples;
};

bool has_memory_op_benchmark(const std::string& file_path);
// Throws InputError(file, "/benchmarks/memory_op[/column][ row i]", problem) on a missing
// group, column or attribute, an unknown op or dtype, a non-positive dimension or time, or
// negative byte counts.
MemoryOpBenchmark read_memory_op_benchmark(const std::string& file_path);
// Writes (replaces) the table with attributes kind = "memory_op", device, source and `extra`.
void write_memory_op_benchmark(const std::string& file_path, const MemoryOpBenchmark& benchmark,
                               const benchmark_data::BenchmarkAttributes& extra = {});

}  // namespace perfsim::kernels
