#pragma once
// What every perfsim-bench-* program shares: the output, device, timing and cap options,
// the attributes every table gets (benchmark_data/benchmark_schema.hpp), and a main() wrapper
// that turns perfsim errors into "perfsim-bench-x: error: ..." and exit code 2.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "benchmark_data/benchmark_schema.hpp"
#include "microbench/cuda/device_kernels.hpp"
#include "microbench/cuda/kernel_timer.hpp"
#include "perfsim/dtype.hpp"
#include "perfsim/units.hpp"

namespace perfsim::microbench::cuda {

struct CommonOptions {
  std::string output;
  int device = 0;
  std::string device_name;       // default: the CUDA device name (a configs/devices alias)
  double memory_fraction = 0.5;  // of the free device memory a case may use
  double initial_warmup_s = 30;  // seed 003 Sec. 4.1: let clocks settle before the first case
  int max_cases = 0;             // 0: all; for smoke runs
  bool dry_run = false;          // print the sweep's size and exit
  std::uint64_t seed = 1;
  TimingPlan timing{};
};

void add_common_options(CLI::App& app, CommonOptions& options);

// The memory cap of one case, from the fraction of what is free on the device now.
Bytes case_memory_cap_bytes(const CommonOptions& options);

// kind/device/source come from the writer; this adds software, clocks, timing and the
// command line.
benchmark_data::BenchmarkAttributes run_attributes(const CommonOptions& options,
                                                   const std::string& command_line);

// fp32/tf32 -> kFloat32 storage, fp16, bf16; throws RuntimeFailure for others.
ElementType storage_type(DType dtype);
std::vector<DType> parse_dtype_list(const std::vector<std::string>& names);

// Runs the programme's heaviest representative case for initial_warmup_s seconds.
void initial_warmup(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                    double seconds);

std::string joined_command_line(int argc, char** argv);

// Calls body(); catches perfsim::InputError, RuntimeFailure and CLI11 errors.
int run_bench_main(const char* program, const std::function<int()>& body);

// "  [12/300] ..." progress line on stderr.
void report_progress(std::size_t done, std::size_t total, const std::string& what);

}  // namespace perfsim::microbench::cuda
