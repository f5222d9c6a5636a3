#include "kernels/conv_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>

#include "kernels/analytical_gemm.hpp"
#include "kernels/ceil_div.hpp"

namespace perfsim::kernels {
namespace {

// Flops per loaded operand element at which a tile reaches half its bandwidth-free rate; the
// value that comes closest to analytical_gemm's tile efficiencies (256x128: 1, 128x128: 0.96,
// 128x64: 0.88, 64x64: 0.81, 128x16: 0.59 against 1, 0.95, 0.85, 0.70, 0.50 there).
constexpr double kTileHalfIntensity = 14;
// Tensor cores read channels (the innermost NHWC dim) in 16-byte vectors: 8 fp16/bf16, 4 tf32.
constexpr int kTensorCoreChannelVectorBytes = 16;
// Shortest k-slice a split-K kernel gives one CTA.
constexpr std::int64_t kMinSplitSliceK = 64;

struct ConvTile {
  int m;
  int n;
};
// cuDNN's implicit-GEMM kernels come in more shapes than cuBLAS's big tiles: narrow ones for
// small K or C.
constexpr std::array<ConvTile, 14> kConvTiles{{{256, 128},
                                               {128, 256},
                                               {256, 64},
                                               {64, 256},
                                               {128, 128},
                                               {128, 64},
                                               {64, 128},
                                               {128, 32},
                                               {32, 128},
                                               {64, 64},
                                               {64, 32},
                                               {32, 64},
                                               {128, 16},
                                               {16, 128}}};

double tile_intensity(const ConvTile& tile) {
  return static_cast<double>(tile.m) * tile.n / (tile.m + tile.n);
}
double tile_efficiency(const ConvTile& tile) {
  constexpr ConvTile kLargest{256, 128};
  const double reference =
      tile_intensity(kLargest) / (tile_intensity(kLargest) + kTileHalfIntensity);
  return tile_intensity(tile) / (tile_intensity(tile) + kTileHalfIntensity) / reference;
}

bool runs_on_tensor_cores(const devices::DeviceSpec& device, DType dtype) {
  return device.gemm_unit(dtype) == devices::MathUnit::kTensorCore;
}

}  // namespace

DType conv_math_dtype(DType storage, const devices::DeviceSpec& device) {
  if (storage == DType::kFloat32 &&
      device.peak_flops_per_s(DType::kTFloat32, devices::MathUnit::kTensorCore))
    return DType::kTFloat32;
  return storage;
}

DurationUs conv_duration_us(const ConvWork& work, const devices::DeviceSpec& device) {
  ConvWork run = work;
  run.dtype = conv_math_dtype(work.dtype, device);
  return conv_estimate(run, device, conv_efficiency_for(device, run.dtype)).duration_us;
}

ConvEfficiencyParameters conv_efficiency_for(const devices::DeviceSpec& device, DType dtype) {
  ConvEfficiencyParameters parameters;
  if (auto it = device.conv_efficiency.find(device.gemm_unit(dtype));
      it != device.conv_efficiency.end()) {
    parameters.peak_fraction = it->second.peak_fraction.value;
    parameters.pipeline_depth_k = it->second.pipeline_depth_k.value;
    parameters.fixed_latency_us = it->second.fixed_latency_us.value;
    parameters.fast_algorithm_flop_fraction = it->second.fast_algorithm_flop_fraction.value;
    parameters.max_split_k = it->second.max_split_k.value;
    parameters.fitted = it->second.peak_fraction.provenance == devices::Provenance::kMeasured;
    return parameters;
  }
  const GemmEfficiencyParameters gemm = gemm_efficiency_for(device, dtype);
  parameters.peak_fraction = gemm.peak_fraction;
  parameters.pipeline_depth_k = gemm.pipeline_depth_k;
  parameters.fixed_latency_us = gemm.fixed_latency_us;
  return parameters;
}

ConvEstimate conv_estimate(const ConvWork& work, const devices::DeviceSpec& device,
                           const ConvEfficiencyParameters& efficiency) {
  ConvEstimate best;
  const ConvShape& shape = work.shape;
  if (shape.batch <= 0 || shape.in_channels <= 0 || shape.out_channels <= 0 || shape.out_h <= 0 ||
      shape.out_w <= 0 || shape.filter_h <= 0 || shape.filter_w <= 0)
    return best;
  ConvShape padded = shape;
  if (runs_on_tensor_cores(device, work.dtype)) {
    const std::int64_t groups = std::max<std::int64_t>(1, shape.groups);
    const std::int64_t vector =
        kTensorCoreChannelVectorBytes / std::max(1, element_bytes(work.dtype));
    padded.in_channels = ceil_div(shape.in_channels / groups, vector) * vector * groups;
  }
  best.gemm = implicit_gemm(padded, work.pass);
  const ImplicitGemm& gemm = best.gemm;
  const double peak = device.gemm_peak_flops_per_s(work.dtype);
  const auto sm_count = static_cast<std::int64_t>(device.sm_count.value);
  const double per_sm_peak = peak / static_cast<double>(sm_count);
  const double flop_fraction =
      fast_algorithm_applies(shape) ? efficiency.fast_algorithm_flop_fraction : 1.0;
  best.duration_us = std::numeric_limits<double>::infinity();
  for (const ConvTile& tile : kConvTiles) {
    const std::int64_t tiles = ceil_div(gemm.m, tile.m) * ceil_div(gemm.n, tile.n) * gemm.batch;
    std::int64_t split = 1;
    if (tiles < sm_count) {
      split = std::min({sm_count / tiles, static_cast<std::int64_t>(efficiency.max_split_k),
                        std::max<std::int64_t>(1, gemm.k / kMinSplitSliceK)});
      split = std::max<std::int64_t>(1, split);
    }
    const double slice_k = static_cast<double>(gemm.k) / static_cast<double>(split);
    const std::int64_t waves = ceil_div(tiles * split, sm_count);
    const double k_efficiency = slice_k / (slice_k + efficiency.pipeline_depth_k);
    const double tile_us =
        2.0 * tile.m * tile.n * slice_k * flop_fraction /
        (per_sm_peak * efficiency.peak_fraction * tile_efficiency(tile) * k_efficiency) *
        kUsPerSecond;
    const double compute_us = static_cast<double>(waves) * tile_us;
    if (compute_us < best.duration_us) {
      best.duration_us = compute_us;
      best.tile_m = tile.m;
      best.tile_n = tile.n;
      best.split_k = split;
    }
  }
  best.compute_us = best.duration_us;
  const double bytes = conv_min_bytes(shape, std::max(1, element_bytes(work.dtype)));
  best.memory_us = transfer_time_us(bytes, device.hbm_bandwidth_GBps.value);
  if (best.memory_us > best.duration_us) {
    best.duration_us = best.memory_us;
    best.memory_bound = true;
  }
  best.duration_us += efficiency.fixed_latency_us;
  return best;
}

DurationUs conv_roofline_duration_us(const ConvWork& work, const devices::DeviceSpec& device) {
  const double compute_us =
      conv_flops(work.shape) / device.gemm_peak_flops_per_s(work.dtype) * kUsPerSecond;
  const double bytes = conv_min_bytes(work.shape, std::max(1, element_bytes(work.dtype)));
  return std::max(compute_us, transfer_time_us(bytes, device.hbm_bandwidth_GBps.value));
}

std::string conv_model_parameters() {
  std::ostringstream out;
  out << "implicit GEMM per pass (fprop M=NPQ N=K K=CRS; dgrad M=NHW N=C K=K ceil(R/s) ceil(S/s); "
         "wgrad M=K N=CRS K=NPQ), "
      << kConvTiles.size() << " tiles with efficiency h/(h+" << kTileHalfIntensity
      << "), split-K slices >= " << kMinSplitSliceK << ", tensor-core channels padded to "
      << kTensorCoreChannelVectorBytes << "-byte vectors, fp32 as tf32 where tensor cores take it"
      << "; peak fraction, pipeline depth, latency, FFT/Winograd flop fraction and max split-K "
         "from the device file's conv_efficiency (fitted), else its GEMM efficiency and no fast "
         "algorithm (nominal)";
  return out.str();
}

}  // namespace perfsim::kernels
