// perfsim-bench-memops: the own element-wise, copy, concat, transpose, layer_norm and dropout
// kernels and host<->device copies over microbench/host/memory_op_sweep -> /benchmarks/memory_op
// (seed 000 Sec. 4.3.2.1.2: the roofline's corrected peak bandwidth is the largest measured).
#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>

#include "kernels/memory_op_benchmark_table.hpp"
#include "microbench/cuda/bench_common.hpp"
#include "microbench/cuda/cuda_resources.hpp"
#include "microbench/host/memory_op_sweep.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench::cuda {
namespace {

constexpr float kDropoutProbability = 0.1f;

struct MemopsOptions {
  CommonOptions common;
  std::vector<std::string> dtypes{"fp32", "fp16", "bf16"};
  MemoryOpSweepOptions sweep;
};

// The buffers of one case and the launch that runs it.
class MemoryOpCaseRunner {
 public:
  MemoryOpCaseRunner(const MemoryOpCase& c, std::uint64_t seed, cudaStream_t stream)
      : case_(c), type_(storage_type(c.dtype)) {
    const auto& s = c.shape;
    elements_ = s[0] * s[1] * s[2];
    const auto bytes = static_cast<std::size_t>(elements_ * element_size(type_));
    const bool two_inputs = c.op == "add" || c.op == "concat";
    input_ = DeviceBuffer(bytes);
    if (two_inputs)
      second_ = DeviceBuffer(bytes);
    output_ = DeviceBuffer(c.op == "concat" ? 2 * bytes : bytes);
    if (c.op == "layer_norm") {
      const auto params = static_cast<std::size_t>(s[1] * element_size(type_));
      gamma_ = DeviceBuffer(params);
      beta_ = DeviceBuffer(params);
      stats_ = DeviceBuffer(static_cast<std::size_t>(2 * s[0]) * sizeof(float));
      launch_fill_random(type_, gamma_.data(), s[1], seed + 2, stream);
      launch_fill_random(type_, beta_.data(), s[1], seed + 3, stream);
    }
    if (c.op == "dropout")
      mask_ = DeviceBuffer(static_cast<std::size_t>(elements_));
    if (c.op == "memcpy_h2d" || c.op == "memcpy_d2h")
      host_ = std::make_unique<PinnedBuffer>(bytes);
    launch_fill_random(type_, input_.data(), elements_, seed, stream);
    if (two_inputs)
      launch_fill_random(type_, second_.data(), elements_, seed + 1, stream);
    bytes_ = bytes;
  }

  void launch(cudaStream_t stream) const {
    const auto& s = case_.shape;
    const std::string& op = case_.op;
    if (op == "add")
      launch_add(type_, input_.data(), second_.data(), output_.data(), elements_, stream);
    else if (op == "gelu")
      launch_gelu(type_, input_.data(), output_.data(), elements_, stream);
    else if (op == "copy")
      launch_copy(type_, input_.data(), output_.data(), elements_, stream);
    else if (op == "memcpy_h2d")
      check_cuda(
          cudaMemcpyAsync(output_.data(), host_->data(), bytes_, cudaMemcpyHostToDevice, stream),
          "cudaMemcpyAsync");
    else if (op == "memcpy_d2h")
      check_cuda(
          cudaMemcpyAsync(host_->data(), input_.data(), bytes_, cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync");
    else if (op == "concat")
      launch_concat(type_, input_.data(), second_.data(), output_.data(), s[0], s[1], stream);
    else if (op == "transpose")
      launch_transpose(type_, input_.data(), output_.data(), s[0], s[1], s[2], stream);
    else if (op == "layer_norm")
      launch_layer_norm(type_, input_.data(), gamma_.data(), beta_.data(), output_.data(),
                        stats_.as<float>(), stats_.as<float>() + s[0], s[0], s[1], stream);
    else if (op == "dropout")
      launch_dropout(type_, input_.data(), output_.data(), mask_.as<std::uint8_t>(), elements_,
                     kDropoutProbability, 7, stream);
    else
      throw RuntimeFailure("perfsim-bench-memops: no kernel for op " + op);
  }

 private:
  MemoryOpCase case_;
  ElementType type_;
  std::int64_t elements_ = 0;
  std::size_t bytes_ = 0;
  DeviceBuffer input_, second_, output_, gamma_, beta_, stats_, mask_;
  std::unique_ptr<PinnedBuffer> host_;
};

int run(const MemopsOptions& options, const std::string& command_line) {
  MemoryOpSweepOptions sweep = options.sweep;
  sweep.dtypes = parse_dtype_list(options.dtypes);
  if (!options.common.dry_run)
    sweep.memory_cap_bytes =
        std::min(sweep.memory_cap_bytes, case_memory_cap_bytes(options.common));
  std::vector<MemoryOpCase> cases = memory_op_sweep(sweep);
  if (options.common.max_cases > 0 &&
      cases.size() > static_cast<std::size_t>(options.common.max_cases))
    cases.resize(static_cast<std::size_t>(options.common.max_cases));
  std::cout << "perfsim-bench-memops: " << cases.size() << " cases\n";
  if (options.common.dry_run || cases.empty())
    return 0;

  check_cuda(cudaSetDevice(options.common.device), "cudaSetDevice");
  Stream stream;
  kernels::MemoryOpBenchmark benchmark;
  benchmark.source =
      "perfsim-bench-memops (own grid-stride kernels; cudaMemcpyAsync with "
      "pinned host memory for memcpy_h2d/d2h)";
  int unsettled = 0;
  double best_device_GBps = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const MemoryOpCase& c = cases[i];
    const MemoryOpCaseRunner runner(c, options.common.seed + i, stream.get());
    const auto launch = [&](cudaStream_t s) { runner.launch(s); };
    if (i == 0)
      initial_warmup(launch, stream.get(), options.common.initial_warmup_s);
    const KernelTiming timing = time_on_stream(launch, stream.get(), options.common.timing);
    unsettled += timing.settled ? 0 : 1;
    benchmark.samples.push_back(
        {c.op, c.dtype, c.shape, c.bytes_read, c.bytes_written, timing.summary.mean_us});
    const double GBps = bandwidth_GBps(c.bytes_read + c.bytes_written, timing.summary.mean_us);
    if (c.op.rfind("memcpy", 0) != 0)
      best_device_GBps = std::max(best_device_GBps, GBps);
    std::ostringstream what;
    what << c.op << " " << dtype_name(c.dtype) << " [" << c.shape[0] << ", " << c.shape[1] << ", "
         << c.shape[2] << "]: " << timing.summary.mean_us << " us, " << GBps << " GB/s";
    report_progress(i + 1, cases.size(), what.str());
  }
  benchmark_data::BenchmarkAttributes attributes = run_attributes(options.common, command_line);
  attributes["unsettled_warmups"] = std::to_string(unsettled);
  attributes["largest_device_bandwidth_GBps"] = std::to_string(best_device_GBps);
  attributes["dropout_probability"] = std::to_string(kDropoutProbability);
  benchmark.device = options.common.device_name.empty() ? attributes.at("cuda_device_name")
                                                        : options.common.device_name;
  kernels::write_memory_op_benchmark(options.common.output, benchmark, attributes);
  std::cout << "wrote " << benchmark.samples.size() << " cases to " << options.common.output << ":"
            << kernels::kMemoryOpBenchmarkGroup << " (largest device bandwidth " << best_device_GBps
            << " GB/s)\n";
  return 0;
}

}  // namespace
}  // namespace perfsim::microbench::cuda

int main(int argc, char** argv) {
  using namespace perfsim::microbench::cuda;
  CLI::App app{"perfsim-bench-memops: memory-op sweep -> /benchmarks/memory_op"};
  MemopsOptions options;
  add_common_options(app, options.common);
  app.add_option("--dtypes", options.dtypes, "precisions: fp32 fp16 bf16");
  app.add_option("--min-elements", options.sweep.min_elements,
                 "first size of the 1-D ops (doubling)");
  app.add_option("--layer-norm-hidden", options.sweep.layer_norm_hidden, "hidden sizes");
  CLI11_PARSE(app, argc, argv);
  const std::string command_line = joined_command_line(argc, argv);
  return run_bench_main("perfsim-bench-memops", [&] { return run(options, command_line); });
}
