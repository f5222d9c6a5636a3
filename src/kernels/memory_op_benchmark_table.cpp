#include "kernels/memory_op_benchmark_table.hpp"

#include <algorithm>

#include "benchmark_data/benchmark_schema.hpp"
#include "hdf5/column_table.hpp"
#include "io/checked_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

constexpr std::array<const char*, 3> kDimColumns = {"dim0", "dim1", "dim2"};

bool known_op(const std::string& op) {
  return std::any_of(kMemoryOpNames.begin(), kMemoryOpNames.end(),
                     [&](const char* name) { return op == name; });
}

}  // namespace

bool has_memory_op_benchmark(const std::string& file_path) {
  return h5::group_exists(file_path, kMemoryOpBenchmarkGroup);
}

MemoryOpBenchmark read_memory_op_benchmark(const std::string& file_path) {
  const std::string group = kMemoryOpBenchmarkGroup;
  const h5::ColumnTable table = benchmark_data::read_benchmark_table(
      file_path, group, "memory-op",
      {"op", "dtype", "dim0", "dim1", "dim2", "bytes_read", "bytes_written", "time_us"});
  MemoryOpBenchmark benchmark;
  benchmark.device = table.attributes.at("device");
  benchmark.source = table.attributes.at("source");
  const auto& op = table.strings("op");
  const auto& dtype = table.strings("dtype");
  const auto& read = table.integers("bytes_read");
  const auto& written = table.integers("bytes_written");
  const auto& time = table.doubles("time_us");
  for (std::size_t i = 0; i < table.rows(); ++i) {
    const std::string row = group + " row " + std::to_string(i);
    MemoryOpSample sample;
    sample.op = op[i];
    if (!known_op(sample.op))
      throw InputError(file_path, row + " op", "unknown memory op '" + sample.op + "'");
    auto parsed = parse_dtype(dtype[i]);
    if (!parsed)
      throw InputError(file_path, row, "unknown dtype " + dtype[i]);
    sample.dtype = *parsed;
    for (std::size_t d = 0; d < kDimColumns.size(); ++d) {
      sample.shape[d] = table.integers(kDimColumns[d])[i];
      if (sample.shape[d] <= 0)
        throw InputError(file_path, row + " " + kDimColumns[d], "dimensions must be positive");
    }
    sample.bytes_read = read[i];
    sample.bytes_written = written[i];
    if (sample.bytes_read < 0 || sample.bytes_written < 0)
      throw InputError(file_path, row, "byte counts must not be negative");
    sample.time_us = time[i];
    if (!(sample.time_us > 0) || !(sample.time_us <= io::kMaxDurationUs))  // inf passes "> 0"
      throw InputError(file_path, row, "time_us must be positive and at most 1e12");
    benchmark.samples.push_back(sample);
  }
  if (benchmark.samples.empty())
    throw InputError(file_path, group, "the table has no rows");
  return benchmark;
}

void write_memory_op_benchmark(const std::string& file_path, const MemoryOpBenchmark& benchmark,
                               const benchmark_data::BenchmarkAttributes& extra) {
  std::vector<std::string> op, dtype;
  std::array<std::vector<std::int64_t>, 3> dims;
  std::vector<std::int64_t> read, written;
  std::vector<double> time, bandwidth;
  for (const MemoryOpSample& sample : benchmark.samples) {
    op.push_back(sample.op);
    dtype.emplace_back(dtype_name(sample.dtype));
    for (std::size_t d = 0; d < dims.size(); ++d)
      dims[d].push_back(sample.shape[d]);
    read.push_back(sample.bytes_read);
    written.push_back(sample.bytes_written);
    time.push_back(sample.time_us);
    bandwidth.push_back(bandwidth_GBps(sample.bytes_read + sample.bytes_written, sample.time_us));
  }
  h5::ColumnTable table;
  table.add("op", op);
  table.add("dtype", dtype);
  for (std::size_t d = 0; d < dims.size(); ++d)
    table.add(kDimColumns[d], dims[d]);
  table.add("bytes_read", read, "bytes");
  table.add("bytes_written", written, "bytes");
  table.add("time_us", time, "us");
  table.add("bandwidth_GBps", bandwidth, "GBps");
  table.attributes =
      benchmark_data::table_attributes("memory_op", benchmark.device, benchmark.source, extra);
  h5::write_table(file_path, kMemoryOpBenchmarkGroup, table);
}

}  // namespace perfsim::kernels
