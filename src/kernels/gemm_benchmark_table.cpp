#include "kernels/gemm_benchmark_table.hpp"

#include "benchmark_data/benchmark_schema.hpp"
#include "hdf5/column_table.hpp"
#include "io/checked_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {

GemmBenchmark read_gemm_benchmark(const std::string& file_path) {
  const std::string group = kGemmBenchmarkGroup;
  const h5::ColumnTable table = benchmark_data::read_benchmark_table(
      file_path, group, "GEMM", {"m", "n", "k", "batch", "dtype", "time_us"});
  GemmBenchmark benchmark;
  benchmark.device = table.attributes.at("device");
  benchmark.source = table.attributes.at("source");
  const auto& m = table.integers("m");
  const auto& n = table.integers("n");
  const auto& k = table.integers("k");
  const auto& batch = table.integers("batch");
  const auto& dtype = table.strings("dtype");
  const auto& time = table.doubles("time_us");
  for (std::size_t i = 0; i < table.rows(); ++i) {
    const std::string row = group + " row " + std::to_string(i);
    if (m[i] <= 0 || n[i] <= 0 || k[i] <= 0 || batch[i] <= 0)
      throw InputError(file_path, row, "sizes must be positive");
    if (!(time[i] > 0) || !(time[i] <= io::kMaxDurationUs))  // inf passes "> 0"
      throw InputError(file_path, row, "time_us must be positive and at most 1e12");
    auto parsed = parse_dtype(dtype[i]);
    if (!parsed)
      throw InputError(file_path, row, "unknown dtype " + dtype[i]);
    benchmark.samples.push_back({m[i], n[i], k[i], batch[i], *parsed, time[i]});
  }
  if (benchmark.samples.empty())
    throw InputError(file_path, group, "the table has no rows");
  return benchmark;
}

void write_gemm_benchmark(const std::string& file_path, const GemmBenchmark& benchmark,
                          const benchmark_data::BenchmarkAttributes& extra) {
  h5::ColumnTable table;
  std::vector<std::int64_t> m, n, k, batch;
  std::vector<std::string> dtype;
  std::vector<double> time;
  for (const GemmSample& sample : benchmark.samples) {
    m.push_back(sample.m);
    n.push_back(sample.n);
    k.push_back(sample.k);
    batch.push_back(sample.batch);
    dtype.emplace_back(dtype_name(sample.dtype));
    time.push_back(sample.time_us);
  }
  table.add("m", m);
  table.add("n", n);
  table.add("k", k);
  table.add("batch", batch);
  table.add("dtype", dtype);
  table.add("time_us", time, "us");
  table.attributes =
      benchmark_data::table_attributes("gemm", benchmark.device, benchmark.source, extra);
  h5::write_table(file_path, kGemmBenchmarkGroup, table);
}

}  // namespace perfsim::kernels
