#pragma once
// The GEMM table of a benchmark HDF5 file, as microbench/ writes it and `perfsim train` reads
// it (one table per benchmark kind, src/hdf5/column_table.hpp layout):
//   group /benchmarks/gemm
//     m, n, k, batch   int64    C[batch][m][n] = A[batch][m][k] B[batch][k][n]
//     dtype            string   "fp32", "tf32", "fp16", "bf16", "fp8" (perfsim::parse_dtype)
//     time_us          float64  units "us": mean kernel time of the GEMM
//   attributes: device (a configs/devices name or alias, required), source (tool and version,
//   required), and optionally kernel (what was timed), iterations, clocks.
#include <string>
#include <vector>

#include "benchmark_data/benchmark_schema.hpp"
#include "perfsim/dtype.hpp"
#include "perfsim/units.hpp"

namespace perfsim::kernels {

inline constexpr const char* kGemmBenchmarkGroup = "/benchmarks/gemm";

struct GemmSample {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
  DType dtype = DType::kFloat32;
  DurationUs time_us = 0;
};

struct GemmBenchmark {
  std::string device;
  std::string source;
  std::vector<GemmSample> samples;
};

// Throws InputError(file, "/benchmarks/gemm[/column][row i]", problem) on a missing group,
// column or attribute, a non-positive size or time, or an unknown dtype.
GemmBenchmark read_gemm_benchmark(const std::string& file_path);
// Writes (replaces) the table with attributes kind = "gemm", device, source, and `extra`
// (software, clocks, iterations, ...; benchmark_data/benchmark_schema.hpp).
void write_gemm_benchmark(const std::string& file_path, const GemmBenchmark& benchmark,
                          const benchmark_data::BenchmarkAttributes& extra = {});

}  // namespace perfsim::kernels
