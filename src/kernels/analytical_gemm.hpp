#pragma once
// Analytical GEMM model for devices without a trained MLP (no GPU data yet). cuBLAS splits C
// into output tiles, one thread block (CTA) per tile, and runs them in waves of one CTA per SM:
//   tile quantization: ceil(m / tile_m) * ceil(n / tile_n) * batch tiles do full-tile work;
//   wave quantization: ceil(tiles / #SM) waves, each as long as one tile;
//   one tile takes 2 tile_m tile_n k / (peak / #SM * efficiency), with efficiency =
//     peak_fraction * tile_efficiency(tile) * k / (k + pipeline_depth_k)  (small k cannot hide
//     the prologue and epilogue of the main loop);
// and the result is never faster than moving A, B and C once through HBM; a fixed per-kernel
// latency (device file, else 0) is added to it. The tile giving the
// shortest time is taken (cuBLAS heuristics pick among such tiles).
#include <string>

#include "devices/device_spec.hpp"
#include "kernels/kernel_work.hpp"

namespace perfsim::kernels {

struct GemmEstimate {
  DurationUs duration_us = 0;
  int tile_m = 0;
  int tile_n = 0;
  std::int64_t waves = 0;
  bool memory_bound = false;
  double achieved_fraction_of_peak = 0;  // 2 m n k batch / (t * peak)
};

// The model's two efficiency parameters. Defaults: estimates used where a device file gives
// no fitted or carried-over values (large cuBLAS GEMMs reach roughly 85-90% of peak).
struct GemmEfficiencyParameters {
  double peak_fraction = 0.88;
  double pipeline_depth_k = 64;  // k-steps of main-loop prologue + epilogue per tile
  // Per-kernel cost that does not scale with the work (setup, the last wave's tail, the
  // epilogue's final write-back), added once; 0 unless a device file measured it.
  double fixed_latency_us = 0;
  // FP8 GEMMs with a split (FP32-promoted) accumulator take this many times longer in the main
  // loop; 1 unless the device file measured it (gemm_efficiency.tensor_core_fp8).
  double split_accumulator_time_factor = 1;
  // Whether the values came from a device-file entry fitted on measured GEMMs.
  bool measured = false;
};
// The device file's values for the unit the dtype runs on, else the defaults. FP8 uses the
// file's tensor_core_fp8 entry when there is one, else the FP8 estimate below.
GemmEfficiencyParameters gemm_efficiency_for(const devices::DeviceSpec& device, DType dtype);

// gemm_efficiency_for() at the clock a GPU held at its power limit sustains: on tensor cores the
// peak fraction times the device's sustained_clock_fraction (the fitted terms describe short
// benchmarks at the boost clock), so the main loop takes 1 / fraction as long while the HBM
// floor and the fixed latency stay. CUDA-core GEMMs and devices without the figure: unchanged.
GemmEfficiencyParameters sustained_clock_gemm_efficiency(const devices::DeviceSpec& device,
                                                         DType dtype);

GemmEstimate analytical_gemm_estimate(const GemmWork& work, const devices::DeviceSpec& device);
GemmEstimate analytical_gemm_estimate(const GemmWork& work, const devices::DeviceSpec& device,
                                      const GemmEfficiencyParameters& efficiency);
inline DurationUs analytical_gemm_duration_us(const GemmWork& work,
                                              const devices::DeviceSpec& device) {
  return analytical_gemm_estimate(work, device).duration_us;
}

// The shortest time the GEMM can take at the device's sustained tensor-core throughput
// (DeviceSpec::sustained_tensor_core_tflops): its flops at that rate (FP8: the rate of the
// split accumulator, torch._scaled_mm's default; fast accumulation sustains the device's
// split_accumulator_time_factor more), plus the fixed latency; 0 when the device file
// gives no sustained figure for the dtype. The analytical model's efficiencies were fitted on
// short benchmarks; this floor is what a GPU held at its power limit sustains.
DurationUs sustained_gemm_floor_us(const GemmWork& work, const devices::DeviceSpec& device);

// The model's fixed parameters, for `perfsim models`.
std::string analytical_gemm_parameters();

}  // namespace perfsim::kernels
