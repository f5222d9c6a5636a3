#pragma once
// Benchmark HDF5, collective kind: one table per measured sweep under
// /benchmarks/collective/<name> (src/hdf5/column_table.hpp layout), shared with microbench/.
// Columns: collective (string), bytes (int64, "bytes"), time_us (float64, "us"),
// algbw_GBps and busbw_GBps (float64, "GBps"), n_ranks, n_nodes, in_place (int64, 0/1).
// Attributes: kind = "collective", device, software, source and source_file (the same),
// time_derived_from_busbw ("true"/"false"), units, and every "# key: value" header of the
// source as "header_<key>" (benchmark_data/benchmark_schema.hpp). A measuring tool may add
// per-sample float64 columns (microbench/: time percentiles); the reader ignores them.
#include <span>
#include <string>
#include <vector>

#include "collectives/collective_sweep.hpp"

namespace perfsim::benchmark_data {

inline constexpr char kCollectiveBenchmarkGroup[] = "/benchmarks/collective";

// Writes (replaces) table /benchmarks/collective/<sweep.name>.
void write_collective_sweep(const std::string& file_path, const collectives::CollectiveSweep& sweep,
                            bool truncate_file = false);

// One more per-sample column of a collective table, e.g. {"time_p50_us", "us", ...}.
struct ExtraSampleColumn {
  std::string name;
  std::string unit;
  std::vector<double> values;  // one per sample, in sweep.samples order
};
// As above, with extra columns; throws RuntimeFailure when a column's length differs from the
// number of samples or its name is one of the schema's own columns.
void write_collective_sweep(const std::string& file_path, const collectives::CollectiveSweep& sweep,
                            bool truncate_file, std::span<const ExtraSampleColumn> extra_columns);
// Throws InputError naming the file and table for a missing table, an unknown collective name,
// rows mixing collectives or group sizes.
collectives::CollectiveSweep read_collective_sweep(const std::string& file_path,
                                                   const std::string& name);
std::vector<std::string> list_collective_sweeps(const std::string& file_path);

}  // namespace perfsim::benchmark_data
