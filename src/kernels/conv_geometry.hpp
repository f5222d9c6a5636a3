#pragma once
// A 2-D convolution's shape and the implicit GEMM each of its three passes runs. cuDNN's
// implicit-GEMM kernels never materialize the im2col matrix, but the work they tile is that of
//   forward (fprop):      Y[N P Q, K]      = X_im2col[N P Q, C R S]    * W[C R S, K]
//   backward data (dgrad): dX[N H W, C]    = dY_col[N H W, K R' S']    * W[K R' S', C]
//   backward filter (wgrad): dW[K, C R S]  = dY[K, N P Q]              * X_im2col[N P Q, C R S]
// per group (groups run as a batch of independent GEMMs with C/g and K/g channels).
// R' = ceil(R / stride_h), S' = ceil(S / stride_w): a strided dgrad runs as stride_h x stride_w
// stride-1 sub-convolutions over the input pixels, each with only the filter taps that land on
// it, and still writes every input pixel (those no tap reaches get zeros).
#include <cstdint>
#include <string_view>

namespace perfsim::kernels {

enum class ConvPass { kForward, kBackwardData, kBackwardFilter };
std::string_view conv_pass_name(ConvPass pass);

struct ConvShape {
  std::int64_t batch = 1;         // N
  std::int64_t in_channels = 1;   // C
  std::int64_t in_h = 1;          // H
  std::int64_t in_w = 1;          // W
  std::int64_t out_channels = 1;  // K
  std::int64_t filter_h = 1;      // R
  std::int64_t filter_w = 1;      // S
  std::int64_t out_h = 1;         // P
  std::int64_t out_w = 1;         // Q
  std::int64_t stride_h = 1;
  std::int64_t stride_w = 1;
  std::int64_t groups = 1;  // 1: dense; C: depthwise
};

// PyTorch's output extent: floor((in + 2 pad - dilation (filter - 1) - 1) / stride) + 1, or 0
// when the filter does not fit.
std::int64_t conv_output_extent(std::int64_t in, std::int64_t filter, std::int64_t stride,
                                std::int64_t pad, std::int64_t dilation);

// The stride a traced convolution used, from its input, filter and output extents (traces
// record tensor shapes, not the stride argument): the smallest stride for which some padding
// of 0 .. filter / 2 per side (dilation 1) gives `out`; 1 when none does.
std::int64_t conv_stride_from_extents(std::int64_t in, std::int64_t filter, std::int64_t out);

struct ImplicitGemm {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;  // groups
};
ImplicitGemm implicit_gemm(const ConvShape& shape, ConvPass pass);

// 2 N K P Q (C/g) R S: the multiply-adds of the direct convolution, the same for all passes.
double conv_flops(const ConvShape& shape);

// Bytes any pass must move through HBM at least: its two operands and its result once each
// (forward: X, W -> Y; dgrad: dY, W -> dX; wgrad: dY, X -> dW), i.e. X, Y and W once.
double conv_min_bytes(const ConvShape& shape, int element_bytes);

// Whether the shape and pass can use cuDNN's FFT or Winograd algorithms (stride 1, both filter
// extents at least 3), which do fewer multiplies than the direct convolution.
bool fast_algorithm_applies(const ConvShape& shape);

}  // namespace perfsim::kernels
