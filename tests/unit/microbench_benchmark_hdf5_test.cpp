// What microbench/ writes is the one benchmark HDF5 schema: read back by the readers that
// `perfsim fit` (collectives) and `perfsim train` (GEMM, embedding) use, and accepted by
// those commands themselves. The times here are synthetic (a latency-bandwidth law and the
// analytical GEMM's shape), because no GPU measures them in CI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "assets/collective_curve_assets.hpp"
#include "benchmark_data/collective_benchmark_table.hpp"
#include "collectives/fitted_curve.hpp"
#include "hdf5/column_table.hpp"
#include "kernels/embedding_benchmark_table.hpp"
#include "kernels/gemm_benchmark_table.hpp"
#include "kernels/memory_op_benchmark_table.hpp"
#include "kernels/mlp_asset.hpp"
#include "microbench/host/collective_results.hpp"
#include "microbench/host/collective_sizes.hpp"
#include "microbench/host/gemm_sweep.hpp"
#include "microbench/host/memory_op_sweep.hpp"
#include "microbench/host/reuse_index_generator.hpp"
#include "microbench/host/zipf_indices.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("perfsim_microbench_" + name)).string();
}

// An 8-GPU all-reduce sweep from 4 B to 256 MiB with times of a latency-bandwidth law
// (25 us start-up, 150 GB/s bus bandwidth), five iterations each spread by +-2%.
CollectiveRun synthetic_all_reduce() {
  CollectiveRun run;
  run.kind = CollectiveKind::kAllReduce;
  run.n_ranks = 8;
  run.n_nodes = 1;
  run.name = collective_table_name(run.kind, run.n_ranks, run.n_nodes);
  run.device = "8x NVIDIA H100 80GB HBM3";
  run.nccl = "2.28.9";
  run.software = "CUDA runtime 13.0 (synthetic test data)";
  run.source = "microbench_benchmark_hdf5_test";
  run.metadata["topology"] = "synthetic";
  const double bus_factor = 2.0 * 7 / 8;
  for (Bytes size : collective_message_sizes(run.kind, {4, Bytes{512} << 20, 4, run.n_ranks})) {
    const double t = 25.0 + static_cast<double>(size) * bus_factor / 150e9 * 1e6;
    run.measurements.push_back({size, size, false, {t * 0.98, t, t * 1.02, t, t}});
  }
  return run;
}

TEST(MicrobenchHdf5, CollectiveRunReadsBackAsTheSweepPerfsimFitUses) {
  const std::string path = temp_path("collective.h5");
  const CollectiveRun run = synthetic_all_reduce();
  write_collective_run(path, run, true);
  EXPECT_EQ(benchmark_data::list_collective_sweeps(path), std::vector<std::string>{run.name});
  const auto sweep = benchmark_data::read_collective_sweep(path, run.name);
  EXPECT_EQ(sweep.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(sweep.n_ranks, 8);
  ASSERT_EQ(sweep.samples.size(), run.measurements.size());
  EXPECT_EQ(sweep.samples.front().bytes, 4);
  EXPECT_EQ(sweep.samples.back().bytes, Bytes{256} << 20);
  // busbw = size x 2(n-1)/n / mean time: the law's 150 GB/s, less the 25 us start-up.
  const double transfer_us = static_cast<double>(Bytes{256} << 20) * 1.75 / 150e9 * 1e6;
  EXPECT_NEAR(sweep.samples.back().busbw_GBps, 150.0 * transfer_us / (25.0 + transfer_us), 1e-6);
  EXPECT_EQ(sweep.metadata.at("nccl"), "2.28.9");
  const h5::ColumnTable table = h5::read_table(path, "/benchmarks/collective/" + run.name);
  for (const char* key : {"kind", "device", "source", "software"})
    EXPECT_TRUE(table.attributes.contains(key)) << key;
  EXPECT_EQ(table.attributes.at("kind"), "collective");
  EXPECT_EQ(table.attributes.at("device"), "8x NVIDIA H100 80GB HBM3");
  EXPECT_EQ(table.units.at("time_p95_us"), "us");
  EXPECT_DOUBLE_EQ(table.doubles("iterations").front(), 5.0);
  EXPECT_NEAR(table.doubles("time_max_us").front(), (25.0 + 4 * 1.75 / 150e3) * 1.02, 1e-9);
  // What `perfsim fit` does with it: the curve recovers the law's start-up and bandwidth.
  const collectives::FittedCurve fitted = collectives::fit_sweep(sweep);
  EXPECT_NEAR(fitted.curve.parameters().ts_us, 25.0, 2.5);
  EXPECT_NEAR(fitted.curve.parameters().bwmax_GBps, 150.0, 15.0);
}

TEST(MicrobenchHdf5, ExtraColumnsMustMatchTheSamples) {
  const CollectiveRun run = synthetic_all_reduce();
  const auto sweep = to_collective_sweep(run);
  const std::vector<benchmark_data::ExtraSampleColumn> short_column{{"time_p50_us", "us", {1.0}}};
  EXPECT_THROW(
      benchmark_data::write_collective_sweep(temp_path("bad.h5"), sweep, true, short_column),
      RuntimeFailure);
  const std::vector<benchmark_data::ExtraSampleColumn> clash{
      {"time_us", "us", std::vector<double>(sweep.samples.size(), 1.0)}};
  EXPECT_THROW(benchmark_data::write_collective_sweep(temp_path("bad.h5"), sweep, true, clash),
               RuntimeFailure);
}

// GEMM times of a roofline-like law on a 900 TFLOP/s, 3 TB/s device, as a stand-in.
kernels::GemmBenchmark synthetic_gemm() {
  GemmSweepOptions options;
  options.grid_max = 512;
  options.random_shapes = 10;
  options.neighbourhood_centres = {128};
  options.batch_counts = {4};
  options.batched_grid_max = 128;
  kernels::GemmBenchmark benchmark{"H100", "microbench_benchmark_hdf5_test (synthetic)", {}};
  for (const GemmShape& s : gemm_sweep(options)) {
    const double flop = 2.0 * static_cast<double>(s.batch * s.m * s.n * s.k);
    const double bytes = static_cast<double>(gemm_footprint_bytes(s));
    const double t = 3.0 + std::max(flop / 900e12, bytes / 3e12) * 1e6;
    benchmark.samples.push_back({s.m, s.n, s.k, s.batch, s.dtype, t});
  }
  return benchmark;
}

TEST(MicrobenchHdf5, GemmEmbeddingAndMemoryOpTablesShareOneFile) {
  const std::string path = temp_path("kernels.h5");
  std::filesystem::remove(path);
  const benchmark_data::BenchmarkAttributes extra{{"software", "CUDA 13.0, cuBLAS 13.0"},
                                                  {"sm_clock_MHz", "1980"}};
  const kernels::GemmBenchmark gemm = synthetic_gemm();
  kernels::write_gemm_benchmark(path, gemm, extra);

  // One embedding row from a generated batch: the bins written are the batch's own.
  IndexBatchRequest request{20000, 512, 512 * 8, {}, 4};
  request.shares = kernels::reuse_factor_histogram(zipf_indices(20000, 512 * 8, 1.05, 2), 20000);
  const IndexBatch batch = generate_index_batch(request);
  kernels::EmbeddingSample sample{
      512,   20000,           8.0, 64, kernels::reuse_factor_histogram(batch.indices, 20000),
      false, DType::kFloat16, 42.0};
  kernels::EmbeddingBenchmark embedding{"H100", "test", {sample}};
  kernels::write_embedding_benchmark(path, embedding, extra);

  kernels::MemoryOpBenchmark memory{"H100", "test", {}};
  const MemoryOpCase c = memory_op_case("transpose", DType::kBFloat16, {8, 256, 1024});
  memory.samples.push_back({c.op, c.dtype, c.shape, c.bytes_read, c.bytes_written, 2.0});
  kernels::write_memory_op_benchmark(path, memory, extra);

  const auto gemm_back = kernels::read_gemm_benchmark(path);
  ASSERT_EQ(gemm_back.samples.size(), gemm.samples.size());
  EXPECT_EQ(gemm_back.samples.back().dtype, gemm.samples.back().dtype);
  const auto embedding_back = kernels::read_embedding_benchmark(path);
  ASSERT_EQ(embedding_back.samples.size(), 1u);
  EXPECT_EQ(embedding_back.samples[0].reuse_factors, sample.reuse_factors);
  const auto memory_back = kernels::read_memory_op_benchmark(path);
  ASSERT_EQ(memory_back.samples.size(), 1u);
  EXPECT_EQ(memory_back.samples[0].shape, c.shape);
  EXPECT_EQ(memory_back.samples[0].bytes_read, 8 * 256 * 1024 * 2);
  const h5::ColumnTable memory_table = h5::read_table(path, kernels::kMemoryOpBenchmarkGroup);
  EXPECT_DOUBLE_EQ(memory_table.doubles("bandwidth_GBps")[0], 2.0 * 8 * 256 * 1024 * 2 / 2e3);
  for (const char* group : {kernels::kGemmBenchmarkGroup, kernels::kEmbeddingBenchmarkGroup,
                            kernels::kMemoryOpBenchmarkGroup}) {
    const h5::ColumnTable table = h5::read_table(path, group);
    EXPECT_EQ(table.attributes.at("software"), "CUDA 13.0, cuBLAS 13.0") << group;
    EXPECT_EQ(table.attributes.at("sm_clock_MHz"), "1980") << group;
    EXPECT_EQ(table.attributes.at("device"), "H100") << group;
  }
  EXPECT_EQ(h5::read_table(path, kernels::kGemmBenchmarkGroup).attributes.at("kind"), "gemm");
  EXPECT_EQ(h5::read_table(path, kernels::kMemoryOpBenchmarkGroup).attributes.at("kind"),
            "memory_op");
}

TEST(MicrobenchHdf5, MemoryOpReaderNamesTheBadRow) {
  const std::string path = temp_path("memory_bad.h5");
  std::filesystem::remove(path);
  kernels::MemoryOpBenchmark memory{"H100", "test", {}};
  memory.samples.push_back({"softmax", DType::kFloat32, {4, 1, 1}, 16, 16, 1.0});
  kernels::write_memory_op_benchmark(path, memory);
  try {
    kernels::read_memory_op_benchmark(path);
    FAIL() << "an unknown op must throw";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "/benchmarks/memory_op row 0 op");
  }
}

// Runs the perfsim binary (a singleton MPI process) and returns its exit status and output.
// Under the sanitizer build, leak checking is off for the child: Open MPI's MPI_Init keeps
// allocations (some in MCA components it unloads) that LeakSanitizer reports at exit.
std::pair<int, std::string> run_perfsim(const std::string& arguments, const std::string& log) {
  const std::string command =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      "OMPI_MCA_mpi_yield_when_idle=1 ASAN_OPTIONS=detect_leaks=0 '" PERFSIM_BINARY "' " +
      arguments + " > '" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  return {status, text.str()};
}

TEST(MicrobenchHdf5, PerfsimFitAndTrainAcceptTheFiles) {
  const std::string bench = temp_path("fit_bench.h5");
  const std::string curves = temp_path("fit_curves.h5");
  write_collective_run(bench, synthetic_all_reduce(), true);
  std::filesystem::remove(curves);
  const auto [fit_status, fit_log] =
      run_perfsim("fit '" + bench + "' -o '" + curves + "'", temp_path("fit.log"));
  ASSERT_EQ(fit_status, 0) << fit_log;
  const auto curve_set = assets::read_collective_curves(curves);
  ASSERT_EQ(curve_set.size(), 1u);
  EXPECT_EQ(curve_set.begin()->first, "all_reduce_8r_1n");

  const std::string kernels_bench = temp_path("train_bench.h5");
  const std::string models = temp_path("train_models.h5");
  std::filesystem::remove(kernels_bench);
  std::filesystem::remove(models);
  kernels::write_gemm_benchmark(kernels_bench, synthetic_gemm(), {{"software", "synthetic"}});
  const auto [train_status, train_log] =
      run_perfsim("train '" + kernels_bench + "' -o '" + models + "' --quick --epochs 5",
                  temp_path("train.log"));
  ASSERT_EQ(train_status, 0) << train_log;
  EXPECT_NE(train_log.find("GMAE"), std::string::npos) << train_log;
  EXPECT_EQ(kernels::list_mlp_assets(models).size(), 1u);
}

}  // namespace
}  // namespace perfsim::microbench
