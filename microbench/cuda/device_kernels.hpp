#pragma once
// Launchers of the microbenchmarks' own kernels (device_kernels.cu, compiled by nvcc). This
// header is plain C++ over the CUDA runtime API, so host code compiled by the C++ compiler
// with the project's warnings calls them.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace perfsim::microbench::cuda {

enum class ElementType { kFloat32, kFloat16, kBFloat16 };

int element_size(ElementType type);

// Fills n elements with pseudo-random values in [-1, 1) (data-dependent power draw makes
// all-zero inputs run at other clocks than real ones).
void launch_fill_random(ElementType type, void* data, std::int64_t n, std::uint64_t seed,
                        cudaStream_t stream);

// c = a + b; y = gelu(x) (tanh form); dst = src (a vectorless element copy kernel).
void launch_add(ElementType type, const void* a, const void* b, void* c, std::int64_t n,
                cudaStream_t stream);
void launch_gelu(ElementType type, const void* x, void* y, std::int64_t n, cudaStream_t stream);
void launch_copy(ElementType type, const void* src, void* dst, std::int64_t n, cudaStream_t stream);
// out[rows][2 cols] = [a[rows][cols], b[rows][cols]]
void launch_concat(ElementType type, const void* a, const void* b, void* out, std::int64_t rows,
                   std::int64_t cols, cudaStream_t stream);
// out[batch][cols][rows] = in[batch][rows][cols], through 32x32 shared-memory tiles.
void launch_transpose(ElementType type, const void* in, void* out, std::int64_t batch,
                      std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// Per row of [rows][hidden]: y = (x - mean) * rstd * gamma + beta, with fp32 mean and rstd
// written per row (as PyTorch's layer_norm forward does).
void launch_layer_norm(ElementType type, const void* x, const void* gamma, const void* beta,
                       void* y, float* mean, float* rstd, std::int64_t rows, std::int64_t hidden,
                       cudaStream_t stream);
// y = x * mask / (1 - p), mask[i] = 1 with probability 1 - p from a counter-based hash.
void launch_dropout(ElementType type, const void* x, void* y, std::uint8_t* mask, std::int64_t n,
                    float p, std::uint64_t seed, cudaStream_t stream);

// Batched embedding bag (sum pooling) over T tables of [rows][dim] stored back to back;
// indices hold row ids local to their table, bag (t, b) is indices[offsets[t*B + b] ..
// offsets[t*B + b + 1]); output is [B][T][dim]. One warp per bag.
struct EmbeddingBagShape {
  std::int64_t tables = 1;
  std::int64_t rows = 0;
  std::int64_t dim = 0;
  std::int64_t batch = 0;
};
void launch_embedding_bag_forward(ElementType type, const void* weights,
                                  const std::int64_t* indices, const std::int64_t* offsets,
                                  void* output, const EmbeddingBagShape& shape,
                                  cudaStream_t stream);
// The backward with the SGD update fused (seed 000 Sec. 4.3.2.1.1's batched lookup "with SGD
// for the backward case"): weights[t][row] -= learning_rate * grad_output[b][t] for every
// lookup of row in bag (t, b), by atomic adds.
void launch_embedding_bag_backward_sgd(ElementType type, void* weights, const std::int64_t* indices,
                                       const std::int64_t* offsets, const void* grad_output,
                                       float learning_rate, const EmbeddingBagShape& shape,
                                       cudaStream_t stream);

// The SM clock now, from one thread that spins for about `duration_us` comparing clock64()
// with the global nanosecond timer: what the GPU really runs at, without NVML.
double measure_sm_clock_MHz(int device, double duration_us);

}  // namespace perfsim::microbench::cuda
