#include "kernels/embedding_benchmark_table.hpp"

#include <cmath>

#include "benchmark_data/benchmark_schema.hpp"
#include "hdf5/column_table.hpp"
#include "io/checked_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

// Writers may round the bins (float32, printed decimals); a larger gap is a wrong histogram.
constexpr double kReuseSumTolerance = 1e-3;

std::string reuse_column(std::size_t bin) {
  return "rf_" + std::to_string(bin);
}

std::vector<std::string> required_columns() {
  std::vector<std::string> columns{"batch_size", "num_embeddings", "pooling", "dim"};
  for (std::size_t bin = 0; bin < kReuseFactorBins; ++bin)
    columns.push_back(reuse_column(bin));
  for (const char* column : {"direction", "dtype", "time_us"})
    columns.emplace_back(column);
  return columns;
}

}  // namespace

std::string_view lookup_direction_name(bool backward) {
  return backward ? "backward" : "forward";
}

bool has_embedding_benchmark(const std::string& file_path) {
  return h5::group_exists(file_path, kEmbeddingBenchmarkGroup);
}

EmbeddingBenchmark read_embedding_benchmark(const std::string& file_path) {
  const std::string group = kEmbeddingBenchmarkGroup;
  const h5::ColumnTable table =
      benchmark_data::read_benchmark_table(file_path, group, "embedding", required_columns());
  EmbeddingBenchmark benchmark;
  benchmark.device = table.attributes.at("device");
  benchmark.source = table.attributes.at("source");
  const auto& batch = table.integers("batch_size");
  const auto& rows = table.integers("num_embeddings");
  const auto& pooling = table.doubles("pooling");
  const auto& dim = table.integers("dim");
  std::vector<const std::vector<double>*> bins;
  for (std::size_t bin = 0; bin < kReuseFactorBins; ++bin)
    bins.push_back(&table.doubles(reuse_column(bin)));
  const auto& direction = table.strings("direction");
  const auto& dtype = table.strings("dtype");
  const auto& time = table.doubles("time_us");
  for (std::size_t i = 0; i < table.rows(); ++i) {
    const std::string row = group + " row " + std::to_string(i);
    EmbeddingSample sample;
    sample.batch_size = batch[i];
    sample.num_embeddings = rows[i];
    sample.pooling = pooling[i];
    sample.dim = dim[i];
    if (sample.batch_size <= 0 || sample.num_embeddings <= 0 || sample.dim <= 0)
      throw InputError(file_path, row, "batch_size, num_embeddings and dim must be positive");
    if (!(sample.pooling > 0))
      throw InputError(file_path, row, "pooling must be positive");
    double share_sum = 0;
    for (std::size_t bin = 0; bin < kReuseFactorBins; ++bin) {
      const double share = (*bins[bin])[i];
      if (!(share >= 0 && share <= 1))
        throw InputError(file_path, row + " " + reuse_column(bin),
                         "a reuse-factor bin is a share in [0, 1], got " + std::to_string(share));
      sample.reuse_factors[bin] = share;
      share_sum += share;
    }
    if (std::abs(share_sum - 1) > kReuseSumTolerance)
      throw InputError(file_path, row,
                       "reuse-factor bins sum to " + std::to_string(share_sum) + ", not 1");
    if (direction[i] != "forward" && direction[i] != "backward")
      throw InputError(file_path, row + " direction",
                       "expected forward or backward, got " + direction[i]);
    sample.backward = direction[i] == "backward";
    auto parsed = parse_dtype(dtype[i]);
    if (!parsed)
      throw InputError(file_path, row, "unknown dtype " + dtype[i]);
    sample.dtype = *parsed;
    sample.time_us = time[i];
    if (!(sample.time_us > 0) || !(sample.time_us <= io::kMaxDurationUs))  // inf passes "> 0"
      throw InputError(file_path, row, "time_us must be positive and at most 1e12");
    benchmark.samples.push_back(sample);
  }
  if (benchmark.samples.empty())
    throw InputError(file_path, group, "the table has no rows");
  return benchmark;
}

void write_embedding_benchmark(const std::string& file_path, const EmbeddingBenchmark& benchmark,
                               const benchmark_data::BenchmarkAttributes& extra) {
  std::vector<std::int64_t> batch, rows, dim;
  std::vector<double> pooling, time;
  std::vector<std::vector<double>> bins(kReuseFactorBins);
  std::vector<std::string> direction, dtype;
  for (const EmbeddingSample& sample : benchmark.samples) {
    batch.push_back(sample.batch_size);
    rows.push_back(sample.num_embeddings);
    pooling.push_back(sample.pooling);
    dim.push_back(sample.dim);
    for (std::size_t bin = 0; bin < kReuseFactorBins; ++bin)
      bins[bin].push_back(sample.reuse_factors[bin]);
    direction.emplace_back(lookup_direction_name(sample.backward));
    dtype.emplace_back(dtype_name(sample.dtype));
    time.push_back(sample.time_us);
  }
  h5::ColumnTable table;
  table.add("batch_size", batch);
  table.add("num_embeddings", rows);
  table.add("pooling", pooling);
  table.add("dim", dim);
  for (std::size_t bin = 0; bin < kReuseFactorBins; ++bin)
    table.add(reuse_column(bin), std::move(bins[bin]));
  table.add("direction", direction);
  table.add("dtype", dtype);
  table.add("time_us", time, "us");
  table.attributes =
      benchmark_data::table_attributes("embedding", benchmark.device, benchmark.source, extra);
  h5::write_table(file_path, kEmbeddingBenchmarkGroup, table);
}

}  // namespace perfsim::kernels
