// The microbenchmarks' own kernels: element-wise, copies, concat, transpose, layer_norm,
// dropout, a batched embedding bag (forward and SGD backward), and an SM clock probe.
// Written for clarity of memory traffic, not to beat PyTorch's; their times train and check
// the models of kernels these resemble.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "microbench/cuda/device_kernels.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr std::int64_t kMaxBlocks = 1 << 20;  // grid-stride loops cover the rest

void check_launch(const char* kernel) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess)
    throw RuntimeFailure(std::string("launching ") + kernel + ": " + cudaGetErrorString(error));
}

unsigned int blocks_for(std::int64_t n) {
  return static_cast<unsigned int>(
      std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

__device__ __forceinline__ float to_float(float v) {
  return v;
}
__device__ __forceinline__ float to_float(__half v) {
  return __half2float(v);
}
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
struct FromFloat;
template <>
struct FromFloat<float> {
  __device__ static float convert(float v) { return v; }
};
template <>
struct FromFloat<__half> {
  __device__ static __half convert(float v) { return __float2half(v); }
};
template <>
struct FromFloat<__nv_bfloat16> {
  __device__ static __nv_bfloat16 convert(float v) { return __float2bfloat16(v); }
};
template <typename T>
__device__ __forceinline__ T from_float(float v) {
  return FromFloat<T>::convert(v);
}

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

__device__ __forceinline__ float uniform01(std::uint64_t seed, std::int64_t i) {
  return static_cast<float>(splitmix64(seed ^ static_cast<std::uint64_t>(i)) >> 40) * 0x1.0p-24f;
}

template <typename F>
void dispatch(ElementType type, F&& launch) {
  switch (type) {
    case ElementType::kFloat32:
      launch(float{});
      return;
    case ElementType::kFloat16:
      launch(__half{});
      return;
    case ElementType::kBFloat16:
      launch(__nv_bfloat16{});
      return;
  }
}

template <typename T>
__global__ void fill_random_kernel(T* data, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    data[i] = from_float<T>(2.0f * uniform01(seed, i) - 1.0f);
}

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* c, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    c[i] = from_float<T>(to_float(a[i]) + to_float(b[i]));
}

template <typename T>
__global__ void gelu_kernel(const T* x, T* y, std::int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608f;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const float v = to_float(x[i]);
    y[i] = from_float<T>(0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + 0.044715f * v * v * v))));
  }
}

template <typename T>
__global__ void copy_kernel(const T* src, T* dst, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    dst[i] = src[i];
}

template <typename T>
__global__ void concat_kernel(const T* a, const T* b, T* out, std::int64_t rows,
                              std::int64_t cols) {
  const std::int64_t n = rows * 2 * cols;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t row = i / (2 * cols);
    const std::int64_t col = i % (2 * cols);
    out[i] = col < cols ? a[row * cols + col] : b[row * cols + col - cols];
  }
}

constexpr int kTile = 32;
constexpr int kTileRows = 8;

template <typename T>
__global__ void transpose_kernel(const T* in, T* out, std::int64_t rows, std::int64_t cols) {
  __shared__ T tile[kTile][kTile + 1];  // +1: no bank conflicts on the transposed read
  const std::int64_t plane = std::int64_t{blockIdx.z} * rows * cols;
  const std::int64_t col = std::int64_t{blockIdx.x} * kTile + threadIdx.x;
  const std::int64_t row0 = std::int64_t{blockIdx.y} * kTile;
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {
    if (row0 + r < rows && col < cols)
      tile[r][threadIdx.x] = in[plane + (row0 + r) * cols + col];
  }
  __syncthreads();
  const std::int64_t out_col = row0 + threadIdx.x;  // a row of `in` is a column of `out`
  const std::int64_t out_row0 = std::int64_t{blockIdx.x} * kTile;
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {
    if (out_row0 + r < cols && out_col < rows)
      out[plane + (out_row0 + r) * rows + out_col] = tile[threadIdx.x][r];
  }
}

__device__ float block_sum(float value, float* scratch) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    value += __shfl_down_sync(0xffffffffu, value, offset);
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  if (lane == 0)
    scratch[warp] = value;
  __syncthreads();
  float total = 0;
  if (threadIdx.x == 0) {
    for (int w = 0; w < static_cast<int>(blockDim.x) / kWarp; ++w)
      total += scratch[w];
    scratch[0] = total;
  }
  __syncthreads();
  total = scratch[0];
  __syncthreads();
  return total;
}

template <typename T>
__global__ void layer_norm_kernel(const T* x, const T* gamma, const T* beta, T* y, float* mean,
                                  float* rstd, std::int64_t hidden) {
  __shared__ float scratch[kThreads / kWarp];
  const T* row_in = x + std::int64_t{blockIdx.x} * hidden;
  T* row_out = y + std::int64_t{blockIdx.x} * hidden;
  float sum = 0, square_sum = 0;
  for (std::int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
    const float v = to_float(row_in[i]);
    sum += v;
    square_sum += v * v;
  }
  const float mu = block_sum(sum, scratch) / static_cast<float>(hidden);
  const float variance = block_sum(square_sum, scratch) / static_cast<float>(hidden) - mu * mu;
  const float inv_std = rsqrtf(fmaxf(variance, 0.0f) + 1e-5f);
  for (std::int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
    const float v = (to_float(row_in[i]) - mu) * inv_std;
    row_out[i] = from_float<T>(v * to_float(gamma[i]) + to_float(beta[i]));
  }
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = mu;
    rstd[blockIdx.x] = inv_std;
  }
}

template <typename T>
__global__ void dropout_kernel(const T* x, T* y, std::uint8_t* mask, std::int64_t n, float p,
                               std::uint64_t seed) {
  const float scale = 1.0f / (1.0f - p);
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const bool keep = uniform01(seed, i) >= p;
    mask[i] = keep ? 1 : 0;
    y[i] = from_float<T>(keep ? to_float(x[i]) * scale : 0.0f);
  }
}

template <typename T>
__global__ void embedding_forward_kernel(const T* weights, const std::int64_t* indices,
                                         const std::int64_t* offsets, T* output,
                                         EmbeddingBagShape shape) {
  const std::int64_t bag = (std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (bag >= shape.tables * shape.batch)
    return;
  const std::int64_t table = bag / shape.batch;
  const std::int64_t sample = bag % shape.batch;
  const T* table_weights = weights + table * shape.rows * shape.dim;
  T* out = output + (sample * shape.tables + table) * shape.dim;
  for (std::int64_t d = lane; d < shape.dim; d += kWarp) {
    float acc = 0;
    for (std::int64_t i = offsets[bag]; i < offsets[bag + 1]; ++i)
      acc += to_float(table_weights[indices[i] * shape.dim + d]);
    out[d] = from_float<T>(acc);
  }
}

__device__ __forceinline__ void atomic_add_value(float* address, float value) {
  atomicAdd(address, value);
}
__device__ __forceinline__ void atomic_add_value(__half* address, float value) {
  atomicAdd(address, __float2half(value));
}

template <typename T>
__global__ void embedding_backward_sgd_kernel(T* weights, const std::int64_t* indices,
                                              const std::int64_t* offsets, const T* grad_output,
                                              float learning_rate, EmbeddingBagShape shape) {
  const std::int64_t bag = (std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (bag >= shape.tables * shape.batch)
    return;
  const std::int64_t table = bag / shape.batch;
  const std::int64_t sample = bag % shape.batch;
  T* table_weights = weights + table * shape.rows * shape.dim;
  const T* grad = grad_output + (sample * shape.tables + table) * shape.dim;
  for (std::int64_t d = lane; d < shape.dim; d += kWarp) {
    const float step = -learning_rate * to_float(grad[d]);
    for (std::int64_t i = offsets[bag]; i < offsets[bag + 1]; ++i)
      atomic_add_value(&table_weights[indices[i] * shape.dim + d], step);
  }
}

__global__ void clock_probe_kernel(unsigned long long duration_ns, unsigned long long* out) {
  unsigned long long start_ns = 0, now_ns = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start_ns));
  const long long start_cycles = clock64();
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now_ns));
  } while (now_ns - start_ns < duration_ns);
  const long long cycles = clock64() - start_cycles;
  out[0] = static_cast<unsigned long long>(cycles);
  out[1] = now_ns - start_ns;
}

unsigned int embedding_blocks(const EmbeddingBagShape& shape) {
  const std::int64_t threads = shape.tables * shape.batch * kWarp;
  return static_cast<unsigned int>((threads + kThreads - 1) / kThreads);
}

}  // namespace

int element_size(ElementType type) {
  return type == ElementType::kFloat32 ? 4 : 2;
}

void launch_fill_random(ElementType type, void* data, std::int64_t n, std::uint64_t seed,
                        cudaStream_t stream) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    fill_random_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(data), n, seed);
  });
  check_launch("fill_random");
}

void launch_add(ElementType type, const void* a, const void* b, void* c, std::int64_t n,
                cudaStream_t stream) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    add_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), n);
  });
  check_launch("add");
}

void launch_gelu(ElementType type, const void* x, void* y, std::int64_t n, cudaStream_t stream) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    gelu_kernel<T>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n);
  });
  check_launch("gelu");
}

void launch_copy(ElementType type, const void* src, void* dst, std::int64_t n,
                 cudaStream_t stream) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    copy_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src),
                                                           static_cast<T*>(dst), n);
  });
  check_launch("copy");
}

void launch_concat(ElementType type, const void* a, const void* b, void* out, std::int64_t rows,
                   std::int64_t cols, cudaStream_t stream) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    concat_kernel<T><<<blocks_for(rows * 2 * cols), kThreads, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), rows, cols);
  });
  check_launch("concat");
}

void launch_transpose(ElementType type, const void* in, void* out, std::int64_t batch,
                      std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned int>((cols + kTile - 1) / kTile),
                  static_cast<unsigned int>((rows + kTile - 1) / kTile),
                  static_cast<unsigned int>(batch));
  const dim3 block(kTile, kTileRows);
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    transpose_kernel<T>
        <<<grid, block, 0, stream>>>(static_cast<const T*>(in), static_cast<T*>(out), rows, cols);
  });
  check_launch("transpose");
}

void launch_layer_norm(ElementType type, const void* x, const void* gamma, const void* beta,
                       void* y, float* mean, float* rstd, std::int64_t rows, std::int64_t hidden,
                       cudaStream_t stream) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    layer_norm_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(beta),
        static_cast<T*>(y), mean, rstd, hidden);
  });
  check_launch("layer_norm");
}

void launch_dropout(ElementType type, const void* x, void* y, std::uint8_t* mask, std::int64_t n,
                    float p, std::uint64_t seed, cudaStream_t stream) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    dropout_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                              static_cast<T*>(y), mask, n, p, seed);
  });
  check_launch("dropout");
}

void launch_embedding_bag_forward(ElementType type, const void* weights,
                                  const std::int64_t* indices, const std::int64_t* offsets,
                                  void* output, const EmbeddingBagShape& shape,
                                  cudaStream_t stream) {
  if (type == ElementType::kFloat32)
    embedding_forward_kernel<float><<<embedding_blocks(shape), kThreads, 0, stream>>>(
        static_cast<const float*>(weights), indices, offsets, static_cast<float*>(output), shape);
  else if (type == ElementType::kFloat16)
    embedding_forward_kernel<__half><<<embedding_blocks(shape), kThreads, 0, stream>>>(
        static_cast<const __half*>(weights), indices, offsets, static_cast<__half*>(output), shape);
  else
    throw RuntimeFailure("embedding bag: only fp32 and fp16 weights are built");
  check_launch("embedding_bag_forward");
}

void launch_embedding_bag_backward_sgd(ElementType type, void* weights, const std::int64_t* indices,
                                       const std::int64_t* offsets, const void* grad_output,
                                       float learning_rate, const EmbeddingBagShape& shape,
                                       cudaStream_t stream) {
  if (type == ElementType::kFloat32)
    embedding_backward_sgd_kernel<float><<<embedding_blocks(shape), kThreads, 0, stream>>>(
        static_cast<float*>(weights), indices, offsets, static_cast<const float*>(grad_output),
        learning_rate, shape);
  else if (type == ElementType::kFloat16)
    embedding_backward_sgd_kernel<__half><<<embedding_blocks(shape), kThreads, 0, stream>>>(
        static_cast<__half*>(weights), indices, offsets, static_cast<const __half*>(grad_output),
        learning_rate, shape);
  else
    throw RuntimeFailure("embedding bag: only fp32 and fp16 weights are built");
  check_launch("embedding_bag_backward_sgd");
}

double measure_sm_clock_MHz(int device, double duration_us) {
  if (cudaSetDevice(device) != cudaSuccess)
    throw RuntimeFailure("measure_sm_clock_MHz: no device " + std::to_string(device));
  unsigned long long* result = nullptr;
  if (cudaMalloc(&result, 2 * sizeof(unsigned long long)) != cudaSuccess)
    throw RuntimeFailure("measure_sm_clock_MHz: cudaMalloc failed");
  clock_probe_kernel<<<1, 1>>>(static_cast<unsigned long long>(duration_us * 1e3), result);
  unsigned long long host[2] = {0, 0};
  const cudaError_t error =
      cudaMemcpy(host, result, sizeof(host), cudaMemcpyDeviceToHost);  // waits for the probe
  cudaFree(result);
  if (error != cudaSuccess || host[1] == 0)
    throw RuntimeFailure(std::string("measure_sm_clock_MHz: ") + cudaGetErrorString(error));
  return static_cast<double>(host[0]) / static_cast<double>(host[1]) * 1e3;
}

}  // namespace perfsim::microbench::cuda
