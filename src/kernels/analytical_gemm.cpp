#include "kernels/analytical_gemm.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "kernels/ceil_div.hpp"

namespace perfsim::kernels {
namespace {

// Smaller tiles re-read more of A and B per flop and run slower (relative efficiencies).

// FP8 (E4M3/E5M2 inputs, bf16 output, fp32 accumulation, cuBLASLt TN): a published cuBLASLt
// benchmark of 8192^3 E4M3 GEMMs on 16 H100 SXM GPUs measured 1599-1630 TFLOP/s, mean about
// 1610 = 0.81 of the 1979 TFLOP/s datasheet peak (gitea.d-robotics.cc/han.zhao/
// test_gpu_scripts, reports_cublaslt_fp8_crosscheck_20260524.md); with the k-efficiency below
// that is a peak fraction of 0.82. The main loop runs twice as fast per k-step while the
// prologue, epilogue (bf16 C written at the same bytes) and scaling take the same time, so
// the fixed overhead is worth twice as many k-steps as the unit's bf16 figure.
constexpr double kFp8PeakFraction = 0.82;
constexpr double kFp8PipelineDepthFactor = 2;

struct Tile {
  int m;
  int n;
  double efficiency;
};
// The narrow tiles stand for the gemv-like kernels cuBLAS uses when one side is tiny.
constexpr std::array<Tile, 8> kTiles{{{256, 128, 1.00},
                                      {128, 256, 1.00},
                                      {128, 128, 0.95},
                                      {128, 64, 0.85},
                                      {64, 128, 0.85},
                                      {64, 64, 0.70},
                                      {128, 16, 0.50},
                                      {16, 128, 0.50}}};

}  // namespace

GemmEfficiencyParameters gemm_efficiency_for(const devices::DeviceSpec& device, DType dtype) {
  GemmEfficiencyParameters parameters;
  auto take = [&](const devices::GemmEfficiency& terms) {
    parameters.peak_fraction = terms.peak_fraction.value;
    parameters.pipeline_depth_k = terms.pipeline_depth_k.value;
    parameters.fixed_latency_us = terms.fixed_latency_us.value;
    parameters.measured = terms.peak_fraction.provenance == devices::Provenance::kMeasured;
  };
  if (dtype == DType::kFloat8 && device.fp8_gemm_efficiency) {
    take(device.fp8_gemm_efficiency->terms);
    parameters.split_accumulator_time_factor =
        device.fp8_gemm_efficiency->split_accumulator_time_factor.value;
    return parameters;
  }
  if (auto it = device.gemm_efficiency.find(device.gemm_unit(dtype));
      it != device.gemm_efficiency.end())
    take(it->second);
  if (dtype == DType::kFloat8) {
    parameters.measured = false;
    parameters.peak_fraction = kFp8PeakFraction;
    parameters.pipeline_depth_k *= kFp8PipelineDepthFactor;
  }
  return parameters;
}

GemmEfficiencyParameters sustained_clock_gemm_efficiency(const devices::DeviceSpec& device,
                                                         DType dtype) {
  GemmEfficiencyParameters parameters = gemm_efficiency_for(device, dtype);
  if (device.gemm_unit(dtype) == devices::MathUnit::kTensorCore)
    parameters.peak_fraction *= device.tensor_core_clock_fraction();
  return parameters;
}

GemmEstimate analytical_gemm_estimate(const GemmWork& work, const devices::DeviceSpec& device) {
  return analytical_gemm_estimate(work, device, gemm_efficiency_for(device, work.dtype));
}

GemmEstimate analytical_gemm_estimate(const GemmWork& work, const devices::DeviceSpec& device,
                                      const GemmEfficiencyParameters& efficiency) {
  GemmEstimate best;
  if (work.m <= 0 || work.n <= 0 || work.k <= 0 || work.batch <= 0)
    return best;
  const double peak = device.gemm_peak_flops_per_s(work.dtype);
  const double sm_count = device.sm_count.value;
  const double per_sm_peak = peak / sm_count;
  const double k = static_cast<double>(work.k);
  const double k_efficiency = k / (k + efficiency.pipeline_depth_k);
  // Promoting the FP8 accumulator stalls the tensor cores in the main loop only: the memory
  // floor and the fixed latency stay as they are.
  const double accumulator_factor = work.dtype == DType::kFloat8 && work.split_accumulator
                                        ? efficiency.split_accumulator_time_factor
                                        : 1.0;
  best.duration_us = std::numeric_limits<double>::infinity();
  for (const Tile& tile : kTiles) {
    const std::int64_t tiles = ceil_div(work.m, tile.m) * ceil_div(work.n, tile.n) * work.batch;
    const std::int64_t waves = ceil_div(tiles, static_cast<std::int64_t>(sm_count));
    const double tile_flops = 2.0 * tile.m * tile.n * k;
    const double tile_us =
        tile_flops / (per_sm_peak * efficiency.peak_fraction * tile.efficiency * k_efficiency) *
        kUsPerSecond;
    const double compute_us = static_cast<double>(waves) * tile_us * accumulator_factor;
    if (compute_us < best.duration_us) {
      best.duration_us = compute_us;
      best.tile_m = tile.m;
      best.tile_n = tile.n;
      best.waves = waves;
    }
  }
  const double element = std::max(1, element_bytes(work.dtype));
  const double m = static_cast<double>(work.m);
  const double n = static_cast<double>(work.n);
  const double batch = static_cast<double>(work.batch);
  const double bytes = (m * k + k * n + m * n) * batch * element;
  const DurationUs memory_us = transfer_time_us(bytes, device.hbm_bandwidth_GBps.value);
  if (memory_us > best.duration_us) {
    best.duration_us = memory_us;
    best.memory_bound = true;
  }
  best.duration_us += efficiency.fixed_latency_us;
  best.achieved_fraction_of_peak =
      2.0 * m * n * k * batch / (best.duration_us / kUsPerSecond) / peak;
  return best;
}

DurationUs sustained_gemm_floor_us(const GemmWork& work, const devices::DeviceSpec& device) {
  const std::optional<double> sustained = device.sustained_gemm_flops_per_s(work.dtype);
  if (!sustained || work.m <= 0 || work.n <= 0 || work.k <= 0 || work.batch <= 0)
    return 0;
  const GemmEfficiencyParameters efficiency = gemm_efficiency_for(device, work.dtype);
  // The FP8 figure was measured through torch._scaled_mm, whose default is the split (FP32-
  // promoted) accumulator; a fast-accumulation GEMM sustains the split factor more.
  const double accumulator_factor = work.dtype == DType::kFloat8 && !work.split_accumulator
                                        ? 1.0 / efficiency.split_accumulator_time_factor
                                        : 1.0;
  const double flops = 2.0 * static_cast<double>(work.m) * static_cast<double>(work.n) *
                       static_cast<double>(work.k) * static_cast<double>(work.batch);
  return flops / *sustained * kUsPerSecond * accumulator_factor + efficiency.fixed_latency_us;
}

std::string analytical_gemm_parameters() {
  std::ostringstream out;
  const GemmEfficiencyParameters defaults;
  out << "peak fraction, pipeline depth and fixed latency from the device file's "
         "gemm_efficiency (else "
      << defaults.peak_fraction << ", " << defaults.pipeline_depth_k << " k-steps and "
      << defaults.fixed_latency_us << " us, estimates; fp8: the file's tensor_core_fp8 entry, "
      << "else " << kFp8PeakFraction << " and " << kFp8PipelineDepthFactor
      << " x the unit's depth, from one cuBLASLt H100 benchmark); FP8 GEMMs of the backward "
         "(split accumulator) x the entry's split_accumulator_time_factor; tiles";
  for (const Tile& tile : kTiles)
    out << " " << tile.m << "x" << tile.n << "@" << tile.efficiency;
  return out.str();
}

}  // namespace perfsim::kernels
