// Golden: the convolution model (kernels/conv_model.hpp) on DeepBench's measured V100
// convolutions (../shared/data/kernels/deepbench-v100, 94 shapes, forward / backward-data /
// backward-filter; 272 measured passes per dtype). configs/devices/V100-SXM2.json carries what
// `perfsim calibrate conv` fits on every row; the out-of-sample figures are those of 5-fold
// cross-validation by shape (every pass and repeat of a shape is held out together), the figures
// the README states: GMAE 25.3% (fp32, CUDA cores) and 33.0% (fp16, tensor cores), against
// 50.2% and 63.8% for the plain roofline max(flops/peak, bytes/HBM).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "devices/device_spec.hpp"
#include "kernels/conv_efficiency_fit.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

const std::filesystem::path kTables =
    std::filesystem::path(PERFSIM_SHARED_DATA_DIR) / "kernels/deepbench-v100";

devices::DeviceSpec v100() {
  return devices::load_device_file(
      (std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/devices/V100-SXM2.json").string());
}

struct Case {
  const char* file;
  DType dtype;
  double out_of_sample_gmae;  // the README's figure, to its last digit
  double roofline_gmae;
};

void check(const Case& c) {
  const std::filesystem::path path = kTables / c.file;
  ASSERT_TRUE(std::filesystem::exists(path)) << "missing " << path;
  const std::vector<MeasuredConv> table = read_deepbench_conv_table(path.string(), c.dtype);
  const devices::DeviceSpec device = v100();
  // 94 shapes; DeepBench ran no input gradient for the 10 image-input layers.
  ASSERT_EQ(table.size(), 3u * 94 - 10);

  const ConvEfficiencyParameters fitted = fit_conv_efficiency(table, device);
  const ConvEfficiencyParameters shipped = conv_efficiency_for(device, c.dtype);
  EXPECT_TRUE(shipped.fitted);
  EXPECT_DOUBLE_EQ(shipped.peak_fraction, fitted.peak_fraction);
  EXPECT_DOUBLE_EQ(shipped.pipeline_depth_k, fitted.pipeline_depth_k);
  EXPECT_DOUBLE_EQ(shipped.fixed_latency_us, fitted.fixed_latency_us);
  EXPECT_DOUBLE_EQ(shipped.fast_algorithm_flop_fraction, fitted.fast_algorithm_flop_fraction);
  EXPECT_DOUBLE_EQ(shipped.max_split_k, fitted.max_split_k);

  const ConvPredictionErrors roofline =
      conv_prediction_errors(table, roofline_conv_table(table, device));
  const ConvPredictionErrors in_sample =
      conv_prediction_errors(table, predict_conv_table(table, device, fitted));
  const ConvPredictionErrors held =
      conv_prediction_errors(table, cross_validated_conv_predictions(table, device, 5));
  std::cout << c.file << ": roofline GMAE " << 100 * roofline.gmae << "%, fitted in sample "
            << 100 * in_sample.gmae << "%, 5-fold out of sample " << 100 * held.gmae << "%\n";
  EXPECT_NEAR(roofline.gmae, c.roofline_gmae, 0.0005);
  EXPECT_NEAR(held.gmae, c.out_of_sample_gmae, 0.0005);
  EXPECT_LT(held.gmae, roofline.gmae);
}

TEST(DeepBenchV100Conv, Fp32FitMatchesTheDeviceFileAndCrossValidates) {
  check({"deepbench-v100-conv-fp32.csv", DType::kFloat32, 0.253, 0.502});
}

TEST(DeepBenchV100Conv, Fp16FitMatchesTheDeviceFileAndCrossValidates) {
  check({"deepbench-v100-conv-fp16-mixed.csv", DType::kFloat16, 0.330, 0.638});
}

TEST(DeepBenchV100Conv, BadRowsNameFileLineAndColumn) {
  const std::filesystem::path bad =
      std::filesystem::temp_directory_path() / "perfsim_conv_bad_table.csv";
  {
    std::ofstream out(bad);
    out << "W,H,C,N,K,S,R,pad_w,pad_h,stride_w,stride_h,fwd_ms,bwd_inputs_ms,bwd_params_ms,P,Q\n"
        << "56,56,64,8,64,3,3,1,1,1,1,0.1,0.1,0.1,56,56\n"
        << "56,56,64,8,64,3,3,1,1,1,1,0.1,0.1,0.1,55,56\n";
  }
  try {
    read_deepbench_conv_table(bad.string(), DType::kFloat32);
    FAIL() << "a P that disagrees with W, S, padding and stride must be an error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("line 3 P"), std::string::npos) << error.what();
  }
  std::filesystem::remove(bad);
}

}  // namespace
}  // namespace perfsim::kernels
