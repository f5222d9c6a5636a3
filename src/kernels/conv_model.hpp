#pragma once
// Convolution kernels (cuDNN forward, backward-data, backward-filter) as the implicit GEMM
// each pass runs (kernels/conv_geometry.hpp), timed like the analytical GEMM model:
//   output tiles of the GEMM, one CTA each, in waves over the SMs (tile and wave
//   quantization); a tile of tile_m x tile_n runs at peak/#SM * peak_fraction *
//   tile_efficiency * k / (k + pipeline_depth_k); tile_efficiency = h / (h + 14) relative to
//   the 256x128 tile, h = tile_m tile_n / (tile_m + tile_n) the flops per operand element a
//   tile loads (14: the value that reproduces analytical_gemm's tile table);
//   when the output has fewer tiles than SMs, k is split into up to max_split_k slices
//   (cuDNN's wgrad kernels reduce over N P Q, which is long, into a small K x C R S output);
//   tensor cores take channels in 16-byte vectors: C/g is padded to a multiple of 8 (fp16,
//   bf16) or 4 (tf32) (the small-channel penalty: a 3-channel image does the work of 8);
//   stride-1 filters of 3x3 and more may run as FFT/Winograd: their multiplies are scaled by
//   fast_algorithm_flop_fraction (1 = no fast algorithm);
//   never faster than moving X, W and Y once through HBM, plus a fixed per-kernel latency.
// The parameters come from the device file's conv_efficiency (fitted on a measured table,
// "fitted"), else from its gemm_efficiency with no fast algorithm ("nominal").
#include <string>

#include "devices/device_spec.hpp"
#include "kernels/conv_geometry.hpp"
#include "kernels/kernel_work.hpp"

namespace perfsim::kernels {

struct ConvEfficiencyParameters {
  double peak_fraction = 0.88;
  double pipeline_depth_k = 64;
  double fixed_latency_us = 0;
  double fast_algorithm_flop_fraction = 1;
  double max_split_k = 1024;  // no practical limit
  bool fitted = false;        // from a measured table on this device
};

// The dtype the convolution's math runs in: fp32 tensors run as tf32 on GPUs whose tensor
// cores take tf32, since PyTorch's torch.backends.cudnn.allow_tf32 defaults to True (unlike
// matmuls, whose allow_tf32 defaults to False); every other dtype as stored.
DType conv_math_dtype(DType storage, const devices::DeviceSpec& device);

// The device file's conv_efficiency for the unit dtype runs on, else nominal values.
ConvEfficiencyParameters conv_efficiency_for(const devices::DeviceSpec& device, DType dtype);

struct ConvEstimate {
  DurationUs duration_us = 0;
  ImplicitGemm gemm;  // as run: channels padded for tensor cores
  int tile_m = 0;
  int tile_n = 0;
  std::int64_t split_k = 1;
  DurationUs compute_us = 0;  // tiles and waves at the parameters' peak fraction
  DurationUs memory_us = 0;   // X, W, Y once at the HBM bandwidth
  bool memory_bound = false;
};

ConvEstimate conv_estimate(const ConvWork& work, const devices::DeviceSpec& device,
                           const ConvEfficiencyParameters& efficiency);
// The kernel as PyTorch runs it: math dtype from conv_math_dtype, the device's parameters.
DurationUs conv_duration_us(const ConvWork& work, const devices::DeviceSpec& device);

// The plain roofline of a convolution: max(direct-convolution flops / unit peak, X + W + Y
// bytes / HBM bandwidth). The baseline `perfsim calibrate conv` compares against.
DurationUs conv_roofline_duration_us(const ConvWork& work, const devices::DeviceSpec& device);

// The model's fixed terms, for `perfsim models`.
std::string conv_model_parameters();

}  // namespace perfsim::kernels
