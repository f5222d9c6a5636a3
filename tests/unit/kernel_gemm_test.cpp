// Analytical GEMM model: tile quantization, wave quantization over the SMs, dtype peaks and
// the memory bound, each checked against a hand calculation of the model's own formula.
#include "kernels/analytical_gemm.hpp"

#include <gtest/gtest.h>

namespace perfsim::kernels {
namespace {

const std::string kDeviceFolder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";

TEST(KernelAnalyticalGemm, WaveQuantizationOnA100) {
  const auto a100 = devices::find_device(kDeviceFolder, "A100-80GB");
  // 108 SMs. m = 12 * 256, n = 9 * 128: exactly 108 tiles of 256x128 -> one wave.
  const GemmEstimate one_wave =
      analytical_gemm_estimate({12 * 256, 9 * 128, 4096, 1, DType::kFloat16}, a100);
  EXPECT_FALSE(one_wave.memory_bound);
  EXPECT_EQ(one_wave.waves, 1);
  EXPECT_EQ(one_wave.tile_m, 256);
  // One tile: 2 * 256 * 128 * 4096 flops at 312e12 / 108 * 0.88 * 1.0 * 4096 / (4096 + 64).
  const double tile_us = 2.0 * 256 * 128 * 4096 / (312e12 / 108 * 0.88 * 4096.0 / 4160.0) * 1e6;
  EXPECT_NEAR(one_wave.duration_us, tile_us, 1e-9);
  // One more row of tiles than the SMs hold: the best tiling needs a second, partial wave,
  // so the time grows much more than the 1/108 extra work.
  const GemmEstimate spill =
      analytical_gemm_estimate({13 * 256, 9 * 128, 4096, 1, DType::kFloat16}, a100);
  EXPECT_GT(spill.duration_us, 1.3 * one_wave.duration_us);
}

TEST(KernelAnalyticalGemm, TileQuantization) {
  const auto a100 = devices::find_device(kDeviceFolder, "A100-80GB");
  // m = 4097 needs ceil(4097 / 128) = 33 rows of 128x256 tiles, the same as m = 4224: the
  // ragged last row costs a full row of tiles (33 x 16 = 528 tiles, 5 waves either way).
  const double ragged = analytical_gemm_duration_us({4097, 4096, 4096, 1, DType::kFloat16}, a100);
  const double padded = analytical_gemm_duration_us({4224, 4096, 4096, 1, DType::kFloat16}, a100);
  EXPECT_DOUBLE_EQ(ragged, padded);
  const GemmEstimate estimate =
      analytical_gemm_estimate({4097, 4096, 4096, 1, DType::kFloat16}, a100);
  EXPECT_EQ(estimate.tile_m, 128);
  EXPECT_EQ(estimate.tile_n, 256);
  EXPECT_EQ(estimate.waves, 5);
}

TEST(KernelAnalyticalGemm, DtypeChoosesThePeak) {
  const auto a100 = devices::find_device(kDeviceFolder, "A100-80GB");
  const GemmWork fp32{8192, 8192, 8192, 1, DType::kFloat32};
  GemmWork fp16 = fp32;
  fp16.dtype = DType::kFloat16;
  GemmWork tf32 = fp32;
  tf32.dtype = DType::kTFloat32;
  // Large and compute bound: the ratio of times is the ratio of peaks (19.5, 156, 312 TFLOP/s).
  EXPECT_NEAR(analytical_gemm_duration_us(fp32, a100) / analytical_gemm_duration_us(fp16, a100),
              16.0, 1e-9);
  EXPECT_NEAR(analytical_gemm_duration_us(tf32, a100) / analytical_gemm_duration_us(fp16, a100),
              2.0, 1e-9);
  const GemmEstimate big = analytical_gemm_estimate(fp16, a100);
  EXPECT_GT(big.achieved_fraction_of_peak, 0.8);
  EXPECT_LT(big.achieved_fraction_of_peak, 0.9);
}

TEST(KernelAnalyticalGemm, SkinnyGemmIsMemoryBound) {
  // A matrix-vector product: 8192 x 8192 fp16 weights (134217728 bytes) read once at
  // 2039 GB/s = 65.825 us, far above its 134 MFLOP at peak.
  const auto a100 = devices::find_device(kDeviceFolder, "A100-80GB");
  const GemmEstimate gemv = analytical_gemm_estimate({8192, 1, 8192, 1, DType::kFloat16}, a100);
  EXPECT_TRUE(gemv.memory_bound);
  EXPECT_NEAR(gemv.duration_us, (8192.0 * 8192 + 8192 + 8192) * 2 / 2039e3, 1e-9);
}

}  // namespace
}  // namespace perfsim::kernels
