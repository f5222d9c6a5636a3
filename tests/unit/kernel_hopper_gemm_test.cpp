// The analytical GEMM model on Hopper with the FP8 terms the device files carry
// (gemm_efficiency.tensor_core_fp8): wave quantization steps, monotonicity in each dimension,
// the split accumulator of backward FP8 GEMMs, and how the op registry marks those GEMMs.
#include <gtest/gtest.h>

#include <string>

#include "devices/device_spec.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/kernel_predictor.hpp"
#include "kernels/op_kernel_registry.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

const std::string kDeviceFolder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";

devices::DeviceSpec h100() {
  return devices::find_device(kDeviceFolder, "H100-SXM");
}

TEST(KernelHopperGemm, Fp8WaveQuantizationSteps) {
  const devices::DeviceSpec device = h100();
  // 132 SMs. m = 132 * 128, n = 256: exactly 132 tiles of 128x256 (or 256x128), one wave. One more
  // row of tiles cannot fit one wave with any tile shape: the best tiling needs a second, partial
  // wave, so the time grows far more than the 1/132 extra work.
  const GemmEstimate one =
      analytical_gemm_estimate({132 * 128, 256, 8192, 1, DType::kFloat8}, device);
  const GemmEstimate two =
      analytical_gemm_estimate({133 * 128, 256, 8192, 1, DType::kFloat8}, device);
  EXPECT_EQ(one.waves, 1);
  EXPECT_EQ(one.tile_m * one.tile_n, 128 * 256);  // 128x256 or 256x128: 132 tiles either way
  EXPECT_GE(two.waves, 2);
  EXPECT_FALSE(one.memory_bound);
  const double latency_us = gemm_efficiency_for(device, DType::kFloat8).fixed_latency_us;
  EXPECT_GT(two.duration_us - latency_us, 1.3 * (one.duration_us - latency_us));
  // The tile's time: 2 * 128 * 256 * 8192 flops at the fitted fraction of 1978.9 TFLOP/s / 132
  // and the k-efficiency 8192 / (8192 + depth).
  const GemmEfficiencyParameters fp8 = gemm_efficiency_for(device, DType::kFloat8);
  const double tile_us =
      2.0 * 128 * 256 * 8192 /
      (1978.9e12 / 132 * fp8.peak_fraction * 8192 / (8192 + fp8.pipeline_depth_k)) * 1e6;
  EXPECT_NEAR(one.duration_us, tile_us + latency_us, 1e-9);
}

TEST(KernelHopperGemm, TimeNeverFallsAsAnyDimensionGrows) {
  const devices::DeviceSpec device = h100();
  for (DType dtype : {DType::kFloat8, DType::kBFloat16}) {
    for (int dim = 0; dim < 3; ++dim) {
      double previous = 0;
      for (std::int64_t size = 1; size <= 32768; size += size < 64 ? 1 : size / 16) {
        GemmWork work{4096, 4096, 4096, 1, dtype};
        (dim == 0 ? work.m : dim == 1 ? work.n : work.k) = size;
        const double us = analytical_gemm_duration_us(work, device);
        EXPECT_GE(us, previous) << dtype_name(dtype) << " dim " << dim << " size " << size;
        previous = us;
      }
    }
  }
}

TEST(KernelHopperGemm, SplitAccumulatorSlowsTheMainLoopOnly) {
  const devices::DeviceSpec device = h100();
  const GemmEfficiencyParameters fp8 = gemm_efficiency_for(device, DType::kFloat8);
  EXPECT_GT(fp8.split_accumulator_time_factor, 1.0);
  GemmWork forward{8192, 4096, 4096, 1, DType::kFloat8};
  GemmWork backward = forward;
  backward.split_accumulator = true;
  const double fast = analytical_gemm_duration_us(forward, device);
  const double split = analytical_gemm_duration_us(backward, device);
  EXPECT_NEAR(split - fp8.fixed_latency_us,
              (fast - fp8.fixed_latency_us) * fp8.split_accumulator_time_factor, 1e-9);
  // A weight-streaming GEMM (m = 1) stays at the memory floor: promotion does not move bytes.
  GemmWork gemv{1, 16384, 16384, 1, DType::kFloat8};
  EXPECT_TRUE(analytical_gemm_estimate(gemv, device).memory_bound);
  const double gemv_fast = analytical_gemm_duration_us(gemv, device);
  gemv.split_accumulator = true;
  EXPECT_DOUBLE_EQ(analytical_gemm_duration_us(gemv, device), gemv_fast);
  // Only FP8 accumulators are promoted.
  GemmWork bf16{8192, 4096, 4096, 1, DType::kBFloat16};
  const double bf16_us = analytical_gemm_duration_us(bf16, device);
  bf16.split_accumulator = true;
  EXPECT_DOUBLE_EQ(analytical_gemm_duration_us(bf16, device), bf16_us);
}

Op gemm_op(DType dtype, const std::string& phase) {
  Op op;
  op.name = "aten::mm";
  TensorRef a;
  a.shape = {2048, 1024};
  a.dtype = dtype;
  a.numel = 2048 * 1024;
  TensorRef b;
  b.shape = {1024, 512};
  b.dtype = dtype;
  b.numel = 1024 * 512;
  op.inputs = {a, b};
  if (!phase.empty())
    op.attributes.push_back({"phase", phase});
  return op;
}

bool split_of(const Op& op) {
  const OpExpansion expansion = expand_op(op);
  EXPECT_EQ(expansion.kernels.size(), 1u);
  return std::get<GemmWork>(expansion.kernels.at(0).work).split_accumulator;
}

TEST(KernelHopperGemm, RegistryMarksBackwardFp8Gemms) {
  EXPECT_TRUE(split_of(gemm_op(DType::kFloat8, "backward")));
  EXPECT_FALSE(split_of(gemm_op(DType::kFloat8, "forward")));
  EXPECT_FALSE(split_of(gemm_op(DType::kFloat8, "recompute")));
  EXPECT_FALSE(split_of(gemm_op(DType::kFloat8, "")));
  EXPECT_FALSE(split_of(gemm_op(DType::kBFloat16, "backward")));
}

TEST(KernelHopperGemm, ModelNameSaysFitted) {
  const KernelPredictor h100_predictor(h100());
  KernelSpec kernel{"gemm:aten::mm", KernelCategory::kGemm,
                    GemmWork{4096, 4096, 4096, 1, DType::kFloat8}};
  // "+sustained-clock": the H100 file's sustained clock fraction applies to tensor-core GEMMs.
  EXPECT_EQ(h100_predictor.predict(kernel).model, "analytical-gemm(fitted)+sustained-clock");
  const KernelPredictor a100_predictor(devices::find_device(kDeviceFolder, "A100-80GB"));
  kernel.work = GemmWork{4096, 4096, 4096, 1, DType::kFloat16};
  EXPECT_EQ(a100_predictor.predict(kernel).model, "analytical-gemm");
}

TEST(KernelHopperGemm, DeviceWithoutFp8EntryKeepsTheEstimate) {
  devices::DeviceSpec device = h100();
  device.fp8_gemm_efficiency.reset();
  const GemmEfficiencyParameters estimate = gemm_efficiency_for(device, DType::kFloat8);
  EXPECT_DOUBLE_EQ(estimate.peak_fraction, 0.82);
  EXPECT_DOUBLE_EQ(estimate.split_accumulator_time_factor, 1.0);
  EXPECT_FALSE(estimate.measured);
}

}  // namespace
}  // namespace perfsim::kernels
