// perfsim-bench-embedding: the batched embedding-bag kernel (device_kernels.cu), forward and
// SGD backward, over microbench/host/embedding_sweep, with index batches generated to hit each
// point's reuse-factor histogram (seed 001 Sec. IV-C) -> /benchmarks/embedding.
#include <algorithm>
#include <functional>
#include <iostream>
#include <sstream>

#include "kernels/embedding_benchmark_table.hpp"
#include "microbench/cuda/bench_common.hpp"
#include "microbench/cuda/cuda_resources.hpp"
#include "microbench/host/embedding_sweep.hpp"
#include "microbench/host/reuse_index_generator.hpp"

namespace perfsim::microbench::cuda {
namespace {

constexpr float kLearningRate = 1e-6f;  // small: repeated updates must keep weights finite

struct EmbeddingOptions {
  CommonOptions common;
  std::vector<std::string> dtypes{"fp32", "fp16"};
  EmbeddingSweepOptions sweep;
};

// T index batches, one per table, all realising the point's target histogram, laid out as
// the kernel reads them: indices back to back, T * B + 1 offsets.
struct TableBatches {
  std::vector<std::int64_t> indices;
  std::vector<std::int64_t> offsets;
  kernels::ReuseFactors reuse_factors{};  // of table 0; every table has the same counts
};

TableBatches generate_batches(const EmbeddingSweepPoint& point) {
  TableBatches batches;
  batches.offsets.push_back(0);
  for (std::int64_t table = 0; table < point.tables; ++table) {
    const IndexBatchRequest request{point.table_rows, point.batch_size,
                                    point.batch_size * point.pooling, point.target,
                                    point.seed * 1000 + static_cast<std::uint64_t>(table)};
    const IndexBatch batch = generate_index_batch(request);
    if (table == 0)
      batches.reuse_factors = kernels::reuse_factor_histogram(batch.indices, point.table_rows);
    const auto base = static_cast<std::int64_t>(batches.indices.size());
    batches.indices.insert(batches.indices.end(), batch.indices.begin(), batch.indices.end());
    for (std::size_t bag = 1; bag < batch.offsets.size(); ++bag)
      batches.offsets.push_back(base + batch.offsets[bag]);
  }
  return batches;
}

DeviceBuffer upload(const std::vector<std::int64_t>& values, cudaStream_t stream) {
  DeviceBuffer buffer(values.size() * sizeof(std::int64_t));
  check_cuda(
      cudaMemcpyAsync(buffer.data(), values.data(), buffer.bytes(), cudaMemcpyHostToDevice, stream),
      "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return buffer;
}

int run(const EmbeddingOptions& options, const std::string& command_line) {
  EmbeddingSweepOptions sweep = options.sweep;
  sweep.dtypes = parse_dtype_list(options.dtypes);
  if (!options.common.dry_run)
    sweep.memory_cap_bytes =
        std::min(sweep.memory_cap_bytes, case_memory_cap_bytes(options.common));
  std::vector<EmbeddingSweepPoint> points = embedding_sweep(sweep);
  if (options.common.max_cases > 0 &&
      points.size() > static_cast<std::size_t>(options.common.max_cases))
    points.resize(static_cast<std::size_t>(options.common.max_cases));
  std::cout << "perfsim-bench-embedding: " << points.size()
            << " points (forward and backward each)\n";
  if (options.common.dry_run || points.empty())
    return 0;

  check_cuda(cudaSetDevice(options.common.device), "cudaSetDevice");
  Stream stream;
  kernels::EmbeddingBenchmark benchmark;
  benchmark.source =
      "perfsim-bench-embedding (own batched embedding-bag kernel: one warp per "
      "bag, sum pooling; backward = atomic SGD update)";
  int unsettled = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const EmbeddingSweepPoint& point = points[i];
    const ElementType type = storage_type(point.dtype);
    const EmbeddingBagShape shape{point.tables, point.table_rows, point.dim, point.batch_size};
    const TableBatches batches = generate_batches(point);
    const DeviceBuffer indices = upload(batches.indices, stream.get());
    const DeviceBuffer offsets = upload(batches.offsets, stream.get());
    const std::int64_t weight_elements = point.tables * point.table_rows * point.dim;
    const std::int64_t output_elements = point.batch_size * point.tables * point.dim;
    DeviceBuffer weights(static_cast<std::size_t>(weight_elements * element_size(type)));
    DeviceBuffer output(static_cast<std::size_t>(output_elements * element_size(type)));
    DeviceBuffer grad(static_cast<std::size_t>(output_elements * element_size(type)));
    launch_fill_random(type, weights.data(), weight_elements, point.seed, stream.get());
    launch_fill_random(type, grad.data(), output_elements, point.seed + 1, stream.get());
    const std::function<void(cudaStream_t)> forward = [&](cudaStream_t s) {
      launch_embedding_bag_forward(type, weights.data(), indices.as<std::int64_t>(),
                                   offsets.as<std::int64_t>(), output.data(), shape, s);
    };
    const std::function<void(cudaStream_t)> backward = [&](cudaStream_t s) {
      launch_embedding_bag_backward_sgd(type, weights.data(), indices.as<std::int64_t>(),
                                        offsets.as<std::int64_t>(), grad.data(), kLearningRate,
                                        shape, s);
    };
    if (i == 0)
      initial_warmup(forward, stream.get(), options.common.initial_warmup_s);
    for (const bool is_backward : {false, true}) {
      const KernelTiming timing =
          time_on_stream(is_backward ? backward : forward, stream.get(), options.common.timing);
      unsettled += timing.settled ? 0 : 1;
      // The schema's time is per table: the batched kernel's time / T.
      benchmark.samples.push_back({point.batch_size, point.table_rows,
                                   static_cast<double>(point.pooling), point.dim,
                                   batches.reuse_factors, is_backward, point.dtype,
                                   timing.summary.mean_us / static_cast<double>(point.tables)});
    }
    std::ostringstream what;
    what << dtype_name(point.dtype) << " B=" << point.batch_size << " E=" << point.table_rows
         << " L=" << point.pooling << " D=" << point.dim << " zipf " << point.zipf_exponent
         << ": fwd " << benchmark.samples[benchmark.samples.size() - 2].time_us << " bwd "
         << benchmark.samples.back().time_us << " us per table";
    report_progress(i + 1, points.size(), what.str());
  }
  benchmark_data::BenchmarkAttributes attributes = run_attributes(options.common, command_line);
  attributes["unsettled_warmups"] = std::to_string(unsettled);
  attributes["tables_per_kernel"] = std::to_string(options.sweep.tables);
  attributes["kernel"] = benchmark.source;
  benchmark.device = options.common.device_name.empty() ? attributes.at("cuda_device_name")
                                                        : options.common.device_name;
  kernels::write_embedding_benchmark(options.common.output, benchmark, attributes);
  std::cout << "wrote " << benchmark.samples.size() << " rows to " << options.common.output << ":"
            << kernels::kEmbeddingBenchmarkGroup << "\n";
  return 0;
}

}  // namespace
}  // namespace perfsim::microbench::cuda

int main(int argc, char** argv) {
  using namespace perfsim::microbench::cuda;
  CLI::App app{"perfsim-bench-embedding: embedding-bag sweep -> /benchmarks/embedding"};
  EmbeddingOptions options;
  add_common_options(app, options.common);
  app.add_option("--dtypes", options.dtypes, "weight precisions: fp32 fp16");
  app.add_option("--batch-sizes", options.sweep.batch_sizes, "B values");
  app.add_option("--table-rows", options.sweep.table_rows, "E values");
  app.add_option("--poolings", options.sweep.poolings, "L values");
  app.add_option("--dims", options.sweep.dims, "D values");
  app.add_option("--tables", options.sweep.tables, "T tables per kernel");
  app.add_option("--zipf-exponents", options.sweep.zipf_exponents,
                 "skews of the target reuse-factor histograms (0: uniform)");
  CLI11_PARSE(app, argc, argv);
  options.sweep.seed = options.common.seed;
  const std::string command_line = joined_command_line(argc, argv);
  return run_bench_main("perfsim-bench-embedding", [&] { return run(options, command_line); });
}
