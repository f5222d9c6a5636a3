// perfsim-bench-gemm: cuBLAS GEMM and strided batched GEMM over microbench/host/gemm_sweep
// (fp32, tf32, fp16, bf16) -> /benchmarks/gemm of a benchmark HDF5 for `perfsim train`.
#include <cublas_v2.h>

#include <algorithm>
#include <iostream>
#include <sstream>

#include "kernels/gemm_benchmark_table.hpp"
#include "microbench/cuda/bench_common.hpp"
#include "microbench/cuda/cuda_resources.hpp"
#include "microbench/host/gemm_sweep.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench::cuda {
namespace {

// How PyTorch runs each precision: fp32 without tensor cores unless tf32 is allowed,
// fp16/bf16 inputs and outputs with fp32 accumulation.
struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
};

GemmTypes gemm_types(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::kTFloat32:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case DType::kFloat16:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case DType::kBFloat16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    default:
      throw RuntimeFailure("perfsim-bench-gemm: no cuBLAS GEMM for dtype " +
                           std::string(dtype_name(dtype)));
  }
}

class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream) {
    check_cublas(cublasCreate(&handle_), "cublasCreate");
    check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() { cublasDestroy(handle_); }
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// Row-major C[m][n] = A[m][k] B[k][n] is column-major C^T = B^T A^T: cuBLAS sees an n x m
// result from B (n x k, ld n) and A (k x m, ld k).
void run_gemm(cublasHandle_t handle, const GemmShape& shape, const DeviceBuffer& a,
              const DeviceBuffer& b, const DeviceBuffer& c) {
  const GemmTypes types = gemm_types(shape.dtype);
  const float alpha = 1.0f, beta = 0.0f;
  const int m = static_cast<int>(shape.m), n = static_cast<int>(shape.n),
            k = static_cast<int>(shape.k);
  if (shape.batch == 1) {
    check_cublas(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b.data(),
                              types.data, n, a.data(), types.data, k, &beta, c.data(), types.data,
                              n, types.compute, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
    return;
  }
  check_cublas(cublasGemmStridedBatchedEx(
                   handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b.data(), types.data, n,
                   shape.k * shape.n, a.data(), types.data, k, shape.m * shape.k, &beta, c.data(),
                   types.data, n, shape.m * shape.n, static_cast<int>(shape.batch), types.compute,
                   CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
}

struct GemmOptions {
  CommonOptions common;
  std::vector<std::string> dtypes{"fp32", "tf32", "fp16", "bf16"};
  GemmSweepOptions sweep;
};

int run(const GemmOptions& options, const std::string& command_line) {
  GemmSweepOptions sweep = options.sweep;
  sweep.dtypes = parse_dtype_list(options.dtypes);
  if (!options.common.dry_run)
    sweep.memory_cap_bytes =
        std::min(sweep.memory_cap_bytes, case_memory_cap_bytes(options.common));
  std::vector<GemmShape> shapes = gemm_sweep(sweep);
  if (options.common.max_cases > 0 &&
      shapes.size() > static_cast<std::size_t>(options.common.max_cases))
    shapes.resize(static_cast<std::size_t>(options.common.max_cases));
  Bytes largest = 0;
  for (const GemmShape& shape : shapes)
    largest = std::max(largest, gemm_footprint_bytes(shape));
  std::cout << "perfsim-bench-gemm: " << shapes.size() << " GEMMs, largest footprint " << largest
            << " bytes\n";
  if (options.common.dry_run || shapes.empty())
    return 0;

  check_cuda(cudaSetDevice(options.common.device), "cudaSetDevice");
  Stream stream;
  CublasHandle handle(stream.get());
  // One allocation per operand, sized for the largest case (every case fits the cap).
  DeviceBuffer a(static_cast<std::size_t>(largest)), b(static_cast<std::size_t>(largest)),
      c(static_cast<std::size_t>(largest));
  for (const DeviceBuffer* buffer : {&a, &b, &c})
    launch_fill_random(ElementType::kFloat16, buffer->data(),
                       static_cast<std::int64_t>(buffer->bytes() / 2), options.common.seed,
                       stream.get());
  GemmShape heavy = shapes.front();
  for (const GemmShape& shape : shapes)
    if (shape.m * shape.n * shape.k * shape.batch > heavy.m * heavy.n * heavy.k * heavy.batch)
      heavy = shape;
  initial_warmup([&](cudaStream_t) { run_gemm(handle.get(), heavy, a, b, c); }, stream.get(),
                 options.common.initial_warmup_s);

  kernels::GemmBenchmark benchmark;
  benchmark.source =
      "perfsim-bench-gemm (cublasGemmEx / cublasGemmStridedBatchedEx, "
      "CUBLAS_GEMM_DEFAULT)";
  int unsettled = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& shape = shapes[i];
    // Refill in the case's own dtype so that values are finite and representative.
    const ElementType type = storage_type(shape.dtype);
    const std::int64_t elements = static_cast<std::int64_t>(a.bytes()) / element_size(type);
    for (const DeviceBuffer* buffer : {&a, &b})
      launch_fill_random(type, buffer->data(), elements, options.common.seed + i, stream.get());
    const KernelTiming timing =
        time_on_stream([&](cudaStream_t) { run_gemm(handle.get(), shape, a, b, c); }, stream.get(),
                       options.common.timing);
    unsettled += timing.settled ? 0 : 1;
    benchmark.samples.push_back(
        {shape.m, shape.n, shape.k, shape.batch, shape.dtype, timing.summary.mean_us});
    std::ostringstream what;
    what << dtype_name(shape.dtype) << " " << shape.batch << "x" << shape.m << "x" << shape.n << "x"
         << shape.k << ": " << timing.summary.mean_us << " us";
    report_progress(i + 1, shapes.size(), what.str());
  }
  benchmark_data::BenchmarkAttributes attributes = run_attributes(options.common, command_line);
  attributes["unsettled_warmups"] = std::to_string(unsettled);
  attributes["kernel"] = "cuBLAS GEMM, row-major C = A B, alpha 1, beta 0, fp32 accumulation";
  benchmark.device = options.common.device_name.empty() ? attributes.at("cuda_device_name")
                                                        : options.common.device_name;
  kernels::write_gemm_benchmark(options.common.output, benchmark, attributes);
  std::cout << "wrote " << benchmark.samples.size() << " GEMMs to " << options.common.output << ":"
            << kernels::kGemmBenchmarkGroup << " (" << unsettled
            << " cases ended warm-up unsettled)\n";
  return 0;
}

}  // namespace
}  // namespace perfsim::microbench::cuda

int main(int argc, char** argv) {
  using namespace perfsim::microbench::cuda;
  CLI::App app{"perfsim-bench-gemm: cuBLAS GEMM sweep -> benchmark HDF5 /benchmarks/gemm"};
  GemmOptions options;
  add_common_options(app, options.common);
  app.add_option("--dtypes", options.dtypes, "precisions: fp32 tf32 fp16 bf16");
  app.add_option("--grid-min", options.sweep.grid_min, "smallest grid size (power of two)");
  app.add_option("--grid-max", options.sweep.grid_max, "largest grid size (power of two)");
  app.add_option("--random-shapes", options.sweep.random_shapes, "random shapes per dtype");
  app.add_option("--neighbourhood-centres", options.sweep.neighbourhood_centres,
                 "multiples of 8 to walk around, one size at a time");
  app.add_option("--neighbourhood-radius", options.sweep.neighbourhood_radius,
                 "sizes on each side of a centre");
  app.add_option("--batch-counts", options.sweep.batch_counts, "batched GEMM batch counts");
  app.add_option("--batched-grid-max", options.sweep.batched_grid_max,
                 "largest m, n, k of batched GEMMs (power of two)");
  CLI11_PARSE(app, argc, argv);
  options.sweep.seed = options.common.seed;
  const std::string command_line = joined_command_line(argc, argv);
  return run_bench_main("perfsim-bench-gemm", [&] { return run(options, command_line); });
}
