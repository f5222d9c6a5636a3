// The sustained clock fraction of a device file (configs/devices/README.md,
// `sustained_clock_fraction`): tensor-core kernels priced from short benchmarks at the boost
// clock (the fitted GEMM terms, the fused-attention table) run at that fraction of their rate
// when the GPU is held at its power limit; the HBM floor, the fixed latency and CUDA-core GEMMs
// do not change. Hand-computed on a one-SM device of 1 TFLOP/s.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/kernel_predictor.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

using nlohmann::json;

json figure(double value) {
  return {{"value", value}, {"provenance", "measured"}, {"source", "test"}};
}

// One SM, 1 TFLOP/s bf16 on tensor cores, 2 TFLOP/s fp32 on CUDA cores, 1000 GB/s HBM; a full
// 256 x 128 tile runs at the peak (fraction 1, no k-steps lost), 1 us fixed latency; attention
// measured at 0.5 TFLOP/s at every length.
json tiny_device() {
  json attention_rate = json::array({0.5, 0.5});
  return {{"schema", "perfsim-device/1"},
          {"name", "tiny"},
          {"architecture", "test"},
          {"sm_count", figure(1)},
          {"hbm_capacity_bytes", figure(1e9)},
          {"hbm_bandwidth_GBps", figure(1000)},
          {"l2_size_bytes", figure(1e6)},
          {"l2_bandwidth_GBps", figure(2000)},
          {"pcie_bandwidth_GBps", figure(10)},
          {"min_kernel_duration_us", figure(1)},
          {"peak_tflops",
           {{"tensor_core", {{"bf16", figure(1)}}}, {"cuda_core", {{"fp32", figure(2)}}}}},
          {"gemm_efficiency",
           {{"tensor_core",
             {{"peak_fraction", figure(1)},
              {"pipeline_depth_k", figure(1e-6)},
              {"fixed_latency_us", figure(1)}}},
            {"cuda_core",
             {{"peak_fraction", figure(1)},
              {"pipeline_depth_k", figure(1e-6)},
              {"fixed_latency_us", figure(1)}}}}},
          {"attention_tflops",
           {{"implementation", "test"},
            {"head_dim", 128},
            {"dtypes", {"bf16"}},
            {"sequence_lengths", {1024, 8192}},
            {"forward", attention_rate},
            {"forward_causal", attention_rate},
            {"backward", attention_rate},
            {"provenance", "measured"},
            {"source", "test"}}}};
}

devices::DeviceSpec device_with_fraction(double fraction) {
  json file = tiny_device();
  file["sustained_clock_fraction"] = figure(fraction);
  return devices::parse_device_json(file.dump(), "tiny.json");
}

double predicted_us(const devices::DeviceSpec& device, const KernelWork& work) {
  return KernelPredictor(device).predict({"k", KernelCategory::kGemm, work}).duration_us;
}

// 256 x 128 x 1024 bf16: 2 * 256 * 128 * 1024 = 67,108,864 flops, one tile on one SM: 67.108864
// us at 1 TFLOP/s, + 1 us. Its bytes (851,968 at 1000 GB/s = 0.85 us) never bind.
constexpr double kTileUs = 67.108864;

TEST(KernelSustainedClock, AbsentFractionKeepsTheBurstRate) {
  const devices::DeviceSpec device = devices::parse_device_json(tiny_device().dump(), "tiny.json");
  EXPECT_FALSE(device.sustained_clock_fraction.has_value());
  EXPECT_DOUBLE_EQ(device.tensor_core_clock_fraction(), 1.0);
  EXPECT_NEAR(predicted_us(device, GemmWork{256, 128, 1024, 1, DType::kBFloat16}), kTileUs + 1,
              1e-6);
}

TEST(KernelSustainedClock, TensorCoreMainLoopTakesOneOverTheFraction) {
  const devices::DeviceSpec device = device_with_fraction(0.5);
  const KernelPrediction prediction = KernelPredictor(device).predict(
      {"k", KernelCategory::kGemm, GemmWork{256, 128, 1024, 1, DType::kBFloat16}});
  EXPECT_NEAR(prediction.duration_us, 2 * kTileUs + 1, 1e-6);  // the latency does not scale
  EXPECT_EQ(prediction.model, "analytical-gemm(fitted)+sustained-clock");
  // The fitter's model (calibrate gemm) keeps the burst terms it was fitted as.
  EXPECT_NEAR(analytical_gemm_duration_us({256, 128, 1024, 1, DType::kBFloat16}, device),
              kTileUs + 1, 1e-6);
}

TEST(KernelSustainedClock, MemoryFloorAndCudaCoresDoNotScale) {
  const devices::DeviceSpec device = device_with_fraction(0.5);
  // fp32 runs on CUDA cores (2 TFLOP/s): 33.554432 us + 1, the fraction does not apply.
  EXPECT_NEAR(predicted_us(device, GemmWork{256, 128, 1024, 1, DType::kFloat32}), kTileUs / 2 + 1,
              1e-6);
  // 256 x 128 x 1 bf16: 65,536 flops = 0.065536 us at the full clock, under its HBM floor of
  // (256 + 128 + 256 * 128) * 2 = 66,304 B = 0.066304 us, which decides; at half the clock the
  // compute (0.131072 us) decides. Each + 1 us.
  EXPECT_NEAR(analytical_gemm_duration_us({256, 128, 1, 1, DType::kBFloat16}, device), 0.066304 + 1,
              1e-6);
  EXPECT_NEAR(predicted_us(device, GemmWork{256, 128, 1, 1, DType::kBFloat16}), 0.131072 + 1, 1e-6);
}

TEST(KernelSustainedClock, AttentionTableRunsAtTheFraction) {
  AttentionWork work;
  work.batch_heads = 1;
  work.q_len = 1024;
  work.kv_len = 1024;
  work.head_dim = 128;
  work.dtype = DType::kBFloat16;
  // 4 * 1024^2 * 128 = 536,870,912 flops at 0.5 TFLOP/s = 1073.741824 us; at half the clock
  // twice that.
  EXPECT_NEAR(predicted_us(devices::parse_device_json(tiny_device().dump(), "tiny.json"), work),
              1073.741824, 1e-6);
  const devices::DeviceSpec halved = device_with_fraction(0.5);
  EXPECT_NEAR(predicted_us(halved, work), 2 * 1073.741824, 1e-6);
  EXPECT_NE(KernelPredictor(halved)
                .predict({"a", KernelCategory::kGemm, work})
                .model.find("+sustained-clock"),
            std::string::npos);
}

TEST(KernelSustainedClock, BadFractionNamesTheField) {
  for (const double bad : {1.2, 0.0}) {
    json file = tiny_device();
    file["sustained_clock_fraction"] = figure(bad);
    try {
      devices::parse_device_json(file.dump(), "tiny.json");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("/sustained_clock_fraction/value"),
                std::string::npos)
          << error.what();
    }
  }
}

// The figures of tests/data/kernels/h100-kernel-classes/mamf-finder-h200-bf16.csv by name.
std::map<std::string, std::vector<double>> mamf_finder_figures() {
  std::ifstream in(std::string(PERFSIM_TEST_DATA_DIR) +
                   "/kernels/h100-kernel-classes/mamf-finder-h200-bf16.csv");
  std::map<std::string, std::vector<double>> figures;
  std::string line;
  std::getline(in, line);  // header: gpu,figure,condition,tflops
  while (std::getline(in, line)) {
    const std::size_t first = line.find(',');
    const std::size_t second = line.find(',', first + 1);
    const std::size_t last = line.rfind(',');
    figures[line.substr(first + 1, second - first - 1)].push_back(std::stod(line.substr(last + 1)));
  }
  return figures;
}

TEST(KernelSustainedClock, ShippedHopperFilesCarryTheMamfFinderRatio) {
  const auto figures = mamf_finder_figures();
  ASSERT_EQ(figures.count("mamf"), 1u);
  ASSERT_EQ(figures.count("msmf_node"), 1u);
  const std::vector<double>& mamf = figures.at("mamf");
  ASSERT_EQ(mamf.size(), 2u);  // the quoted range
  // The node's slowest GPU, sustained, over the burst best shape (midpoint of the range).
  const double ratio = figures.at("msmf_node").front() / ((mamf[0] + mamf[1]) / 2);
  const std::string folder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";
  for (const char* name : {"H100-SXM", "H200"}) {
    const devices::DeviceSpec device = devices::find_device(folder, name);
    ASSERT_TRUE(device.sustained_clock_fraction.has_value()) << name;
    EXPECT_NEAR(device.tensor_core_clock_fraction(), ratio, 5e-4) << name;
    EXPECT_EQ(device.sustained_clock_fraction->provenance, devices::Provenance::kMeasured);
  }
  EXPECT_FALSE(devices::find_device(folder, "A100-80GB").sustained_clock_fraction.has_value());
}

}  // namespace
}  // namespace perfsim::kernels
