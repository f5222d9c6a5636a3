// The measured sustained limits of a device file: tensor-core GEMMs run at the sustained clock
// fraction of the fitted (boost-clock) rate, no GEMM is priced faster than the sustained
// tensor-core rate (sustained_tflops), FP8 fast accumulation sustains the split factor more
// than the split accumulator the figure was measured with, the limit binds only the best shapes,
// and element-wise kernels stream at the measured STREAM-copy bandwidth
// (hbm_streaming_bandwidth_GBps). A broken entry names its JSON pointer.
#include <gtest/gtest.h>

#include <string>

#include "devices/device_spec.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/kernel_predictor.hpp"
#include "kernels/roofline.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

const std::string kDeviceFolder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";

devices::DeviceSpec h100() {
  return devices::find_device(kDeviceFolder, "H100-SXM");
}

double flops(const GemmWork& work) {
  return 2.0 * static_cast<double>(work.m * work.n * work.k * work.batch);
}

TEST(KernelSustainedThroughput, LargeBf16GemmRunsAtTheSustainedClock) {
  const devices::DeviceSpec device = h100();
  ASSERT_TRUE(device.sustained_gemm_flops_per_s(DType::kBFloat16).has_value());
  const double sustained = *device.sustained_gemm_flops_per_s(DType::kBFloat16);
  EXPECT_LT(sustained, device.gemm_peak_flops_per_s(DType::kBFloat16));
  const KernelPredictor predictor(device);
  // 4096 x 14336 x 4096 (a Llama 3 8B FFN GEMM): the short-benchmark fit prices it above the
  // sustained rate; at the sustained clock fraction it runs below it, so the clock decides and
  // the floor does not bind.
  const GemmWork ffn{4096, 14336, 4096, 1, DType::kBFloat16};
  ASSERT_LT(analytical_gemm_duration_us(ffn, device), sustained_gemm_floor_us(ffn, device));
  const KernelPrediction prediction = predictor.predict({"mm", KernelCategory::kGemm, ffn});
  EXPECT_EQ(prediction.model, "analytical-gemm(fitted)+sustained-clock");
  EXPECT_DOUBLE_EQ(
      prediction.duration_us,
      analytical_gemm_estimate(ffn, device, sustained_clock_gemm_efficiency(device, ffn.dtype))
          .duration_us);
  EXPECT_GT(prediction.duration_us, sustained_gemm_floor_us(ffn, device));
  EXPECT_LE(flops(ffn) / (prediction.duration_us * 1e-6), sustained);
}

TEST(KernelSustainedThroughput, FullWaveDeepGemmMeetsTheSustainedRate) {
  const devices::DeviceSpec device = h100();
  const double sustained = *device.sustained_gemm_flops_per_s(DType::kBFloat16);
  const KernelPredictor predictor(device);
  // 3072 x 1408 x 65536: 12 x 11 = 132 tiles of 256 x 128, one full wave on 132 SMs, and k so
  // deep that no k-steps are lost: the fit's best case (0.89 of the peak) at the clock fraction
  // is still above the sustained rate, so the floor decides and says so.
  const GemmWork deep{3072, 1408, 65536, 1, DType::kBFloat16};
  const KernelPrediction prediction = predictor.predict({"mm", KernelCategory::kGemm, deep});
  EXPECT_EQ(prediction.model, "analytical-gemm(fitted)+sustained-clock+sustained");
  const double latency_us = gemm_efficiency_for(device, DType::kBFloat16).fixed_latency_us;
  EXPECT_NEAR(prediction.duration_us, flops(deep) / sustained * 1e6 + latency_us, 1e-6);
}

TEST(KernelSustainedThroughput, SmallGemmKeepsTheAnalyticalModelAtTheSustainedClock) {
  const devices::DeviceSpec device = h100();
  const KernelPredictor predictor(device);
  // 256^3 is far below any sustained limit: latency and wave quantization decide.
  const GemmWork small{256, 256, 256, 1, DType::kBFloat16};
  const KernelPrediction prediction = predictor.predict({"mm", KernelCategory::kGemm, small});
  EXPECT_EQ(prediction.model, "analytical-gemm(fitted)+sustained-clock");
  EXPECT_DOUBLE_EQ(
      prediction.duration_us,
      analytical_gemm_estimate(small, device, sustained_clock_gemm_efficiency(device, small.dtype))
          .duration_us);
}

TEST(KernelSustainedThroughput, Fp8FastAccumulationSustainsTheSplitFactorMore) {
  const devices::DeviceSpec device = h100();
  ASSERT_TRUE(device.sustained_gemm_flops_per_s(DType::kFloat8).has_value());
  const double factor = gemm_efficiency_for(device, DType::kFloat8).split_accumulator_time_factor;
  ASSERT_GT(factor, 1.0);
  const double latency_us = gemm_efficiency_for(device, DType::kFloat8).fixed_latency_us;
  GemmWork work{8192, 8192, 8192, 1, DType::kFloat8};
  const double fast_us = sustained_gemm_floor_us(work, device) - latency_us;
  work.split_accumulator = true;
  const double split_us = sustained_gemm_floor_us(work, device) - latency_us;
  EXPECT_NEAR(split_us / fast_us, factor, 1e-9);
  EXPECT_NEAR(split_us, flops(work) / *device.sustained_gemm_flops_per_s(DType::kFloat8) * 1e6,
              1e-6);
}

TEST(KernelSustainedThroughput, DeviceWithoutFiguresKeepsTheModel) {
  const devices::DeviceSpec a100 = devices::find_device(kDeviceFolder, "A100-80GB");
  EXPECT_FALSE(a100.sustained_gemm_flops_per_s(DType::kBFloat16).has_value());
  EXPECT_EQ(sustained_gemm_floor_us({8192, 8192, 8192, 1, DType::kBFloat16}, a100), 0);
  EXPECT_DOUBLE_EQ(a100.streaming_bandwidth_GBps(), a100.hbm_bandwidth_GBps.value);
}

TEST(KernelSustainedThroughput, ElementwiseStreamsAtTheMeasuredCopyBandwidth) {
  const devices::DeviceSpec device = h100();
  ASSERT_TRUE(device.hbm_streaming_bandwidth_GBps.has_value());
  EXPECT_EQ(device.hbm_streaming_bandwidth_GBps->provenance, devices::Provenance::kMeasured);
  EXPECT_LT(device.streaming_bandwidth_GBps(), device.hbm_bandwidth_GBps.value);
  // 1 GB read and 1 GB written by a cast: 2 GB at the copy bandwidth.
  const ElementwiseWork cast{1e9, 1e9, 1e9, DType::kBFloat16};
  EXPECT_NEAR(roofline_duration_us(cast, device),
              2e9 / (device.streaming_bandwidth_GBps() * 1e9) * 1e6, 1e-6);
}

std::string document_with(const std::string& extra) {
  return R"({"schema": "perfsim-device/1", "name": "X", "architecture": "a",
    "sm_count": {"value": 10, "provenance": "vendor-spec", "source": "s"},
    "hbm_capacity_bytes": {"value": 1e9, "provenance": "vendor-spec", "source": "s"},
    "hbm_bandwidth_GBps": {"value": 100, "provenance": "vendor-spec", "source": "s"},
    "l2_size_bytes": {"value": 1e6, "provenance": "vendor-spec", "source": "s"},
    "l2_bandwidth_GBps": {"value": 500, "provenance": "estimate", "source": "s"},
    "pcie_bandwidth_GBps": {"value": 16, "provenance": "vendor-spec", "source": "s"},
    "min_kernel_duration_us": {"value": 2, "provenance": "measured", "source": "s"},
    "peak_tflops": {"tensor_core": {"bf16": {"value": 100, "provenance": "vendor-spec", "source": "s"}},
                    "cuda_core": {"fp32": {"value": 10, "provenance": "vendor-spec", "source": "s"}}})" +
         extra + "}";
}

void expect_error_at(const std::string& text, const std::string& location) {
  try {
    devices::parse_device_json(text, "dev.json");
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(location), std::string::npos) << error.what();
  }
}

TEST(KernelSustainedThroughput, ReadsAndChecksTheEntries) {
  const devices::DeviceSpec spec = devices::parse_device_json(
      document_with(R"(, "sustained_tflops": {"tensor_core": {"bf16": {"value": 80,
        "provenance": "measured", "source": "sweep"}}},
        "hbm_streaming_bandwidth_GBps": {"value": 90, "provenance": "measured", "source": "copy"})"),
      "dev.json");
  EXPECT_DOUBLE_EQ(*spec.sustained_gemm_flops_per_s(DType::kBFloat16), 80e12);
  EXPECT_DOUBLE_EQ(spec.streaming_bandwidth_GBps(), 90);
  // Above the peak is a typo, not a measurement; a dtype without a peak has nothing to sustain.
  expect_error_at(document_with(R"(, "sustained_tflops": {"tensor_core": {"bf16": {"value": 120,
        "provenance": "measured", "source": "s"}}})"),
                  "/sustained_tflops/tensor_core/bf16/value");
  expect_error_at(document_with(R"(, "sustained_tflops": {"tensor_core": {"fp8": {"value": 50,
        "provenance": "measured", "source": "s"}}})"),
                  "/sustained_tflops/tensor_core/fp8");
  expect_error_at(document_with(R"(, "hbm_streaming_bandwidth_GBps": {"value": 101,
        "provenance": "measured", "source": "s"})"),
                  "/hbm_streaming_bandwidth_GBps/value");
}

}  // namespace
}  // namespace perfsim::kernels
