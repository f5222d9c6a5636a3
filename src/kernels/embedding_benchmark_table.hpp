#pragma once
// The embedding-lookup table of a benchmark HDF5 file, as microbenchmarks write it and
// `perfsim train` reads it (src/hdf5/column_table.hpp layout; seed 001 Sec. IV-C: one row per
// table and batch, with the batch's reuse factors):
//   group /benchmarks/embedding
//     batch_size      int64    B, samples in the batch
//     num_embeddings  int64    E, rows of the table
//     pooling         float64  L, lookups per sample (an average; may be fractional)
//     dim             int64    D, elements per row
//     rf_0 .. rf_16   float64  the 17 reuse-factor bins of the batch's indices on this table
//                              (kernels/reuse_factor.hpp): shares of the E rows in [0, 1]
//                              that sum to 1
//     direction       string   "forward" or "backward"
//     dtype           string   weight dtype, "fp32", "fp16", ... (perfsim::parse_dtype)
//     time_us         float64  units "us": kernel time for this ONE table; a benchmark that
//                              looks up T tables in one batched kernel writes kernel time / T
//   attributes: device (a configs/devices name or alias, required), source (tool and version,
//   required), and optionally kernel (what was timed), iterations, clocks.
#include <string>
#include <string_view>
#include <vector>

#include "benchmark_data/benchmark_schema.hpp"
#include "kernels/reuse_factor.hpp"
#include "perfsim/dtype.hpp"
#include "perfsim/units.hpp"

namespace perfsim::kernels {

inline constexpr const char* kEmbeddingBenchmarkGroup = "/benchmarks/embedding";

struct EmbeddingSample {
  std::int64_t batch_size = 0;      // B
  std::int64_t num_embeddings = 0;  // E
  double pooling = 1;               // L
  std::int64_t dim = 0;             // D
  ReuseFactors reuse_factors{};
  bool backward = false;
  DType dtype = DType::kFloat32;
  DurationUs time_us = 0;
};

struct EmbeddingBenchmark {
  std::string device;
  std::string source;
  std::vector<EmbeddingSample> samples;
};

// "forward" / "backward", the values of the direction column.
std::string_view lookup_direction_name(bool backward);

bool has_embedding_benchmark(const std::string& file_path);
// Throws InputError(file, "/benchmarks/embedding[/column][ row i]", problem) on a missing
// group, column or attribute, a non-positive size, pooling or time, a reuse-factor bin outside
// [0, 1] or bins whose sum is not 1 (within 1e-3), an unknown direction or dtype.
EmbeddingBenchmark read_embedding_benchmark(const std::string& file_path);
// Writes (replaces) the table with attributes kind = "embedding", device, source, and `extra`
// (software, clocks, iterations, ...; benchmark_data/benchmark_schema.hpp).
void write_embedding_benchmark(const std::string& file_path, const EmbeddingBenchmark& benchmark,
                               const benchmark_data::BenchmarkAttributes& extra = {});

}  // namespace perfsim::kernels
