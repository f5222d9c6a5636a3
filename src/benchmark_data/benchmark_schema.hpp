#pragma once
// The one benchmark HDF5 schema that `perfsim import nccl-tests`, microbench/, `perfsim fit`
// and `perfsim train` share: one table per benchmark kind (src/hdf5/column_table.hpp layout),
//   /benchmarks/collective/<name>   one table per measured sweep (collective, group)
//   /benchmarks/gemm                 kernels/gemm_benchmark_table.hpp
//   /benchmarks/embedding            kernels/embedding_benchmark_table.hpp
//   /benchmarks/memory_op            kernels/memory_op_benchmark_table.hpp
// Every table carries the string attributes
//   kind      "collective", "gemm", "embedding", "memory_op"
//   device    what was measured (a configs/devices name or alias; "8x NVIDIA H100 ..." for
//             a group)
//   source    the tool that measured it and how (or the imported file)
//   software  versions: CUDA runtime and driver, cuBLAS, NCCL (may be empty for imports)
// and optionally more (clocks, iterations, warm-up, topology). Readers ignore what they do
// not know, so a tool may add attributes and, for collectives, extra per-sample columns.
#include <map>
#include <string>
#include <vector>

#include "hdf5/column_table.hpp"

namespace perfsim::benchmark_data {

// Optional attributes beyond kind/device/source (software, clocks, iterations, ...).
using BenchmarkAttributes = std::map<std::string, std::string>;

inline constexpr char kKindAttribute[] = "kind";

// attributes = extra, then kind, device and source (which win over extra's keys).
std::map<std::string, std::string> table_attributes(const std::string& kind,
                                                    const std::string& device,
                                                    const std::string& source,
                                                    const BenchmarkAttributes& extra);

// Reads the table at `group` for a reader of one benchmark kind: InputError (file, group or
// group/column) when the table is absent ("no <what> benchmark table"), a required column is
// missing, or the device or source attribute is missing or empty.
h5::ColumnTable read_benchmark_table(const std::string& file_path, const std::string& group,
                                     const std::string& what,
                                     const std::vector<std::string>& required_columns);

}  // namespace perfsim::benchmark_data
