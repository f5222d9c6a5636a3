#include "microbench/cuda/bench_common.hpp"

#include <chrono>
#include <iostream>
#include <sstream>

#include "microbench/cuda/cuda_resources.hpp"
#include "microbench/cuda/device_query.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench::cuda {

void add_common_options(CLI::App& app, CommonOptions& options) {
  app.add_option("-o,--output", options.output, "benchmark HDF5 to write (tables replaced)")
      ->required();
  app.add_option("--device", options.device, "CUDA device index")->check(CLI::NonNegativeNumber);
  app.add_option("--device-name", options.device_name,
                 "device attribute (default: the CUDA name, a configs/devices alias)");
  app.add_option("--memory-fraction", options.memory_fraction,
                 "share of the free device memory one case may use")
      ->check(CLI::Range(0.01, 0.95));
  app.add_option("--initial-warmup-s", options.initial_warmup_s,
                 "seconds of load before the first case so that clocks settle")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--iterations", options.timing.timed_iterations, "timed iterations per case")
      ->check(CLI::Range(1, 100000));
  app.add_option("--window", options.timing.window_iterations, "iterations per warm-up window")
      ->check(CLI::Range(1, 100000));
  app.add_option("--warmup-tolerance", options.timing.warmup.relative_tolerance,
                 "warm-up ends when consecutive window means differ by less than this")
      ->check(CLI::Range(1e-4, 0.5));
  app.add_option("--max-warmup-ms", options.timing.max_warmup_ms,
                 "wall-clock bound on one case's warm-up")
      ->check(CLI::Range(0.0, 600000.0));
  app.add_option("--max-cases", options.max_cases, "measure only the first N cases (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--dry-run", options.dry_run, "print the sweep and exit without a GPU");
  app.add_option("--seed", options.seed, "seed of random shapes and index batches");
}

Bytes case_memory_cap_bytes(const CommonOptions& options) {
  return static_cast<Bytes>(static_cast<double>(free_device_memory_bytes(options.device)) *
                            options.memory_fraction);
}

benchmark_data::BenchmarkAttributes run_attributes(const CommonOptions& options,
                                                   const std::string& command_line) {
  const GpuInfo gpu = query_gpu(options.device, true);
  std::ostringstream timing;
  timing << "warm-up windows of " << options.timing.window_iterations
         << " launches until consecutive means differ < "
         << options.timing.warmup.relative_tolerance * 100 << "% "
         << options.timing.warmup.stable_windows << " times (at most "
         << options.timing.max_warmup_ms << " ms), then " << options.timing.timed_iterations
         << " launches timed one by one with CUDA events; time_us is their mean";
  return {{"software", software_versions()},
          {"command", command_line},
          {"timing", timing.str()},
          {"cuda_device_name", gpu.name},
          {"pci_bus_id", gpu.pci_bus_id},
          {"max_sm_clock_MHz", std::to_string(gpu.max_sm_clock_MHz)},
          {"max_memory_clock_MHz", std::to_string(gpu.max_memory_clock_MHz)},
          {"sm_clock_MHz_at_end", std::to_string(gpu.measured_sm_clock_MHz)},
          {"host", host_name()}};
}

ElementType storage_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kTFloat32:
      return ElementType::kFloat32;
    case DType::kFloat16:
      return ElementType::kFloat16;
    case DType::kBFloat16:
      return ElementType::kBFloat16;
    default:
      throw RuntimeFailure("no device storage for dtype " + std::string(dtype_name(dtype)));
  }
}

std::vector<DType> parse_dtype_list(const std::vector<std::string>& names) {
  std::vector<DType> dtypes;
  for (const std::string& name : names) {
    const auto parsed = parse_dtype(name);
    if (!parsed)
      throw InputError("<command line>", "--dtypes", "unknown dtype '" + name + "'");
    dtypes.push_back(*parsed);
  }
  return dtypes;
}

void initial_warmup(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                    double seconds) {
  const auto began = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() <
         seconds) {
    for (int i = 0; i < 10; ++i)
      launch(stream);
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
}

std::string joined_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i)
    line += (i == 0 ? "" : " ") + std::string(argv[i]);
  return line;
}

int run_bench_main(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const InputError& error) {
    std::cerr << program << ": error: " << error.what() << "\n";
  } catch (const RuntimeFailure& error) {
    std::cerr << program << ": error: " << error.what() << "\n";
  }
  return 2;
}

void report_progress(std::size_t done, std::size_t total, const std::string& what) {
  std::cerr << "  [" << done << "/" << total << "] " << what << "\n";
}

}  // namespace perfsim::microbench::cuda
