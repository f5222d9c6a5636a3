// Convolution geometry and the implicit GEMM of each pass (kernels/conv_geometry.hpp) on
// shapes small enough to count by hand, and the convolution model's terms that follow from
// them (tensor-core channel padding, the memory floor, the FFT/Winograd scaling).
#include <gtest/gtest.h>

#include "devices/device_spec.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/conv_model.hpp"

namespace perfsim::kernels {
namespace {

const std::string kDeviceFolder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";

ConvShape shape(std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t k, std::int64_t rs,
                std::int64_t stride, std::int64_t pad, std::int64_t groups = 1) {
  ConvShape out;
  out.batch = n;
  out.in_channels = c;
  out.in_h = out.in_w = hw;
  out.out_channels = k;
  out.filter_h = out.filter_w = rs;
  out.stride_h = out.stride_w = stride;
  out.out_h = out.out_w = conv_output_extent(hw, rs, stride, pad, 1);
  out.groups = groups;
  return out;
}

TEST(ConvGeometry, OutputExtentFollowsPyTorch) {
  EXPECT_EQ(conv_output_extent(224, 7, 2, 3, 1), 112);  // ResNet stem
  EXPECT_EQ(conv_output_extent(56, 3, 1, 1, 1), 56);    // "same" 3x3
  EXPECT_EQ(conv_output_extent(56, 1, 2, 0, 1), 28);    // 1x1 stride 2: (56 - 1) / 2 + 1
  EXPECT_EQ(conv_output_extent(7, 3, 1, 0, 1), 5);      // no padding
  EXPECT_EQ(conv_output_extent(7, 3, 1, 2, 2), 7);      // dilation 2 spans 5 pixels
  EXPECT_EQ(conv_output_extent(2, 5, 1, 0, 1), 0);      // the filter does not fit
}

TEST(ConvGeometry, StrideFromExtents) {
  EXPECT_EQ(conv_stride_from_extents(224, 7, 112), 2);  // ResNet stem, padding 3
  EXPECT_EQ(conv_stride_from_extents(56, 1, 28), 2);    // 1x1 downsampling
  EXPECT_EQ(conv_stride_from_extents(56, 3, 56), 1);    // "same" 3x3
  EXPECT_EQ(conv_stride_from_extents(7, 3, 5), 1);      // unpadded 3x3: smaller, still stride 1
  EXPECT_EQ(conv_stride_from_extents(56, 3, 28), 2);    // 3x3 stride 2, padding 1
  EXPECT_EQ(conv_stride_from_extents(112, 3, 56), 2);   // max pooling's 3x3 stride 2
  EXPECT_EQ(conv_stride_from_extents(300, 3, 100), 3);
  EXPECT_EQ(conv_stride_from_extents(10, 3, 50), 1);  // no stride gives it: 1
}

TEST(ConvGeometry, StrideTwoPaddedThreeByThree) {
  // N 2, C 16, 8x8 input, K 32 filters of 3x3, stride 2, padding 1: 4x4 output.
  const ConvShape s = shape(2, 16, 8, 32, 3, 2, 1);
  ASSERT_EQ(s.out_h, 4);
  const ImplicitGemm fprop = implicit_gemm(s, ConvPass::kForward);
  EXPECT_EQ(fprop.m, 2 * 4 * 4);  // N P Q = 32
  EXPECT_EQ(fprop.n, 32);         // K
  EXPECT_EQ(fprop.k, 16 * 9);     // C R S = 144
  EXPECT_EQ(fprop.batch, 1);
  const ImplicitGemm dgrad = implicit_gemm(s, ConvPass::kBackwardData);
  EXPECT_EQ(dgrad.m, 2 * 8 * 8);   // N H W = 128
  EXPECT_EQ(dgrad.n, 16);          // C
  EXPECT_EQ(dgrad.k, 32 * 2 * 2);  // K ceil(3/2) ceil(3/2) = 128
  const ImplicitGemm wgrad = implicit_gemm(s, ConvPass::kBackwardFilter);
  EXPECT_EQ(wgrad.m, 32);                                       // K
  EXPECT_EQ(wgrad.n, 16 * 9);                                   // C R S
  EXPECT_EQ(wgrad.k, 2 * 4 * 4);                                // N P Q
  EXPECT_DOUBLE_EQ(conv_flops(s), 2.0 * 2 * 32 * 16 * 16 * 9);  // 2 N K P Q C R S
  EXPECT_FALSE(fast_algorithm_applies(s));                      // strided
}

TEST(ConvGeometry, OneByOneIsAPlainGemm) {
  // A 1x1 stride-1 convolution is Y[N H W, K] = X[N H W, C] W[C, K].
  const ConvShape s = shape(8, 256, 14, 1024, 1, 1, 0);
  const ImplicitGemm fprop = implicit_gemm(s, ConvPass::kForward);
  EXPECT_EQ(fprop.m, 8 * 14 * 14);
  EXPECT_EQ(fprop.n, 1024);
  EXPECT_EQ(fprop.k, 256);
  const ImplicitGemm dgrad = implicit_gemm(s, ConvPass::kBackwardData);
  EXPECT_EQ(dgrad.m, 8 * 14 * 14);
  EXPECT_EQ(dgrad.n, 256);
  EXPECT_EQ(dgrad.k, 1024);
  EXPECT_FALSE(fast_algorithm_applies(s));
  // 1x1 stride 2: dgrad still covers every input pixel with one tap (the others get zeros).
  const ConvShape strided = shape(8, 256, 14, 512, 1, 2, 0);
  EXPECT_EQ(strided.out_h, 7);
  EXPECT_EQ(implicit_gemm(strided, ConvPass::kBackwardData).m, 8 * 14 * 14);
  EXPECT_EQ(implicit_gemm(strided, ConvPass::kBackwardData).k, 512);
  EXPECT_EQ(implicit_gemm(strided, ConvPass::kForward).m, 8 * 7 * 7);
}

TEST(ConvGeometry, GroupedAndDepthwise) {
  // 4 groups of 8 input and 16 output channels: four independent GEMMs.
  const ConvShape grouped = shape(1, 32, 10, 64, 3, 1, 1, 4);
  const ImplicitGemm fprop = implicit_gemm(grouped, ConvPass::kForward);
  EXPECT_EQ(fprop.batch, 4);
  EXPECT_EQ(fprop.m, 100);
  EXPECT_EQ(fprop.n, 16);
  EXPECT_EQ(fprop.k, 8 * 9);
  EXPECT_DOUBLE_EQ(conv_flops(grouped), 2.0 * 64 * 100 * 8 * 9);
  // Depthwise: one input and one output channel per group.
  const ConvShape depthwise = shape(2, 32, 10, 32, 3, 1, 1, 32);
  const ImplicitGemm wgrad = implicit_gemm(depthwise, ConvPass::kBackwardFilter);
  EXPECT_EQ(wgrad.batch, 32);
  EXPECT_EQ(wgrad.m, 1);
  EXPECT_EQ(wgrad.n, 9);
  EXPECT_EQ(wgrad.k, 2 * 100);
  EXPECT_DOUBLE_EQ(conv_min_bytes(depthwise, 4), (2.0 * 32 * 100 * 2 + 32 * 9) * 4);
}

TEST(ConvModel, TensorCoresPadChannelsToEight) {
  const devices::DeviceSpec v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  const ConvShape image = shape(16, 3, 224, 64, 7, 2, 3);
  const ConvEfficiencyParameters nominal;
  const ConvEstimate fp16 =
      conv_estimate({image, ConvPass::kForward, DType::kFloat16}, v100, nominal);
  EXPECT_EQ(fp16.gemm.k, 8 * 49);
  const ConvEstimate fp32 =
      conv_estimate({image, ConvPass::kForward, DType::kFloat32}, v100, nominal);
  EXPECT_EQ(fp32.gemm.k, 3 * 49);
}

TEST(ConvModel, Fp32RunsAsTf32WhereTensorCoresTakeIt) {
  const devices::DeviceSpec v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  const devices::DeviceSpec h100 = devices::find_device(kDeviceFolder, "H100-SXM");
  EXPECT_EQ(conv_math_dtype(DType::kFloat32, v100), DType::kFloat32);
  EXPECT_EQ(conv_math_dtype(DType::kFloat32, h100), DType::kTFloat32);
  EXPECT_EQ(conv_math_dtype(DType::kBFloat16, h100), DType::kBFloat16);
  // tf32 tensor cores take 4-channel vectors: the 3-channel stem is padded to 4, not 8.
  const ConvShape image = shape(16, 3, 224, 64, 7, 2, 3);
  const ConvEstimate tf32 = conv_estimate({image, ConvPass::kForward, DType::kTFloat32}, h100,
                                          ConvEfficiencyParameters{});
  EXPECT_EQ(tf32.gemm.k, 4 * 49);
  const ConvWork work{shape(32, 256, 14, 256, 3, 1, 1), ConvPass::kForward, DType::kFloat32};
  ConvWork as_tf32 = work;
  as_tf32.dtype = DType::kTFloat32;
  EXPECT_DOUBLE_EQ(
      conv_duration_us(work, h100),
      conv_estimate(as_tf32, h100, conv_efficiency_for(h100, DType::kTFloat32)).duration_us);
}

TEST(ConvModel, FastAlgorithmScalesOnlyStrideOneFilters) {
  const devices::DeviceSpec v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  ConvEfficiencyParameters direct;
  ConvEfficiencyParameters fast = direct;
  fast.fast_algorithm_flop_fraction = 0.5;
  const ConvWork three_by_three{shape(16, 256, 28, 256, 3, 1, 1), ConvPass::kForward,
                                DType::kFloat32};
  EXPECT_NEAR(conv_estimate(three_by_three, v100, fast).compute_us,
              0.5 * conv_estimate(three_by_three, v100, direct).compute_us, 1e-9);
  const ConvWork one_by_one{shape(16, 256, 28, 256, 1, 1, 0), ConvPass::kForward, DType::kFloat32};
  EXPECT_DOUBLE_EQ(conv_estimate(one_by_one, v100, fast).compute_us,
                   conv_estimate(one_by_one, v100, direct).compute_us);
}

TEST(ConvModel, NeverFasterThanTheRooflineNorTheMemoryFloor) {
  const devices::DeviceSpec v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  ConvEfficiencyParameters ideal;
  ideal.peak_fraction = 1.0;
  ideal.pipeline_depth_k = 1;
  for (const ConvShape& s : {shape(32, 64, 56, 64, 3, 1, 1), shape(32, 2048, 7, 512, 1, 1, 0),
                             shape(32, 3, 224, 64, 7, 2, 3), shape(1, 8, 4, 8, 1, 1, 0)}) {
    for (ConvPass pass : {ConvPass::kForward, ConvPass::kBackwardData, ConvPass::kBackwardFilter}) {
      const ConvWork work{s, pass, DType::kFloat32};
      const ConvEstimate estimate = conv_estimate(work, v100, ideal);
      EXPECT_GE(estimate.duration_us, conv_roofline_duration_us(work, v100) * (1 - 1e-12))
          << conv_pass_name(pass);
      EXPECT_GE(estimate.duration_us, estimate.memory_us);
    }
  }
}

TEST(ConvModel, DeviceFileFitIsFittedElsewhereNominal) {
  const devices::DeviceSpec v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  EXPECT_TRUE(conv_efficiency_for(v100, DType::kFloat32).fitted);
  EXPECT_TRUE(conv_efficiency_for(v100, DType::kFloat16).fitted);
  const devices::DeviceSpec h100 = devices::find_device(kDeviceFolder, "H100-SXM");
  const ConvEfficiencyParameters nominal = conv_efficiency_for(h100, DType::kBFloat16);
  EXPECT_FALSE(nominal.fitted);
  EXPECT_EQ(nominal.fast_algorithm_flop_fraction, 1.0);
  // Nominal takes the device's GEMM efficiency.
  EXPECT_EQ(nominal.peak_fraction, gemm_efficiency_for(h100, DType::kBFloat16).peak_fraction);
}

}  // namespace
}  // namespace perfsim::kernels
