// Device files: every shipped file passes the schema check, figures read back as written, and
// a broken file is rejected with the file, the JSON pointer of the field and the problem.
#include "devices/device_spec.hpp"

#include <gtest/gtest.h>

#include "perfsim/error.hpp"

namespace perfsim::devices {
namespace {

const std::string kDeviceFolder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";

TEST(DeviceSpec, AllShippedFilesPassTheSchemaCheck) {
  const std::vector<DeviceSpec> devices = load_device_folder(kDeviceFolder);
  std::vector<std::string> names;
  for (const DeviceSpec& device : devices)
    names.push_back(device.name);
  EXPECT_EQ(names, (std::vector<std::string>{"A100-40GB", "A100-80GB", "GV100", "H100-SXM", "H200",
                                             "V100-SXM2"}));
  for (const DeviceSpec& device : devices) {
    EXPECT_FALSE(device.sm_count.source.empty()) << device.name;
    EXPECT_GT(device.gemm_peak_flops_per_s(DType::kFloat16), 0) << device.name;
  }
}

TEST(DeviceSpec, ReadsFiguresAndPeaks) {
  const DeviceSpec a100 = find_device(kDeviceFolder, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(a100.name, "A100-80GB");
  EXPECT_EQ(a100.sm_count.value, 108);
  EXPECT_EQ(a100.hbm_bandwidth_GBps.value, 2039);
  EXPECT_EQ(a100.hbm_bandwidth_GBps.provenance, Provenance::kVendorSpec);
  EXPECT_EQ(a100.l2_bandwidth_GBps.provenance, Provenance::kEstimate);
  EXPECT_DOUBLE_EQ(a100.gemm_peak_flops_per_s(DType::kBFloat16), 312e12);
  EXPECT_DOUBLE_EQ(a100.gemm_peak_flops_per_s(DType::kTFloat32), 156e12);
  // fp32 matmuls run on CUDA cores unless the workload asks for tf32.
  EXPECT_DOUBLE_EQ(a100.gemm_peak_flops_per_s(DType::kFloat32), 19.5e12);
  const DeviceSpec v100 = find_device(kDeviceFolder, "Tesla V100-SXM2-32GB");
  EXPECT_EQ(v100.min_kernel_duration_us.provenance, Provenance::kMeasured);
  // V100 tensor cores take no bf16 and CUDA cores have no bf16 peak either.
  EXPECT_THROW(v100.gemm_peak_flops_per_s(DType::kBFloat16), RuntimeFailure);
  EXPECT_THROW(find_device(kDeviceFolder, "TPUv4"), InputError);
}

std::string valid_document() {
  return R"({"schema": "perfsim-device/1", "name": "X", "architecture": "a",
    "sm_count": {"value": 10, "provenance": "vendor-spec", "source": "s"},
    "hbm_capacity_bytes": {"value": 1e9, "provenance": "vendor-spec", "source": "s"},
    "hbm_bandwidth_GBps": {"value": 100, "provenance": "measured", "source": "s"},
    "l2_size_bytes": {"value": 1e6, "provenance": "vendor-spec", "source": "s"},
    "l2_bandwidth_GBps": {"value": 500, "provenance": "estimate", "source": "s"},
    "pcie_bandwidth_GBps": {"value": 16, "provenance": "vendor-spec", "source": "s"},
    "min_kernel_duration_us": {"value": 2, "provenance": "measured", "source": "s"},
    "peak_tflops": {"tensor_core": {"fp16": {"value": 100, "provenance": "vendor-spec", "source": "s"}},
                    "cuda_core": {"fp32": {"value": 10, "provenance": "vendor-spec", "source": "s"}}}})";
}

void expect_error(const std::string& text, const std::string& location,
                  const std::string& problem) {
  try {
    parse_device_json(text, "bad.json");
    FAIL() << "accepted a document that should fail at " << location;
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "bad.json");
    EXPECT_EQ(error.location(), location);
    EXPECT_NE(error.problem().find(problem), std::string::npos) << error.what();
  }
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(DeviceSpec, SchemaErrorsNameFileFieldAndProblem) {
  EXPECT_NO_THROW(parse_device_json(valid_document(), "good.json"));
  expect_error(
      replace(valid_document(), R"("sm_count": {"value": 10,)", R"("sm_count": {"value": -1,)"),
      "/sm_count/value", "positive");
  expect_error(replace(valid_document(), R"("provenance": "measured", "source": "s"},
    "l2_size)",
                       R"("provenance": "datasheet", "source": "s"},
    "l2_size)"),
               "/hbm_bandwidth_GBps/provenance", "datasheet");
  expect_error(
      replace(valid_document(), R"("architecture": "a",)", R"("architecture": "a", "sms": 3,)"),
      "/sms", "unknown field");
  expect_error(replace(valid_document(), R"("fp16": {)", R"("fp17": {)"),
               "/peak_tflops/tensor_core/fp17", "not a dtype");
  expect_error(replace(valid_document(), R"("pcie_bandwidth_GBps")", R"("pcie_GBps")"),
               "/pcie_GBps", "unknown field");
  expect_error("{", "byte 2", "invalid JSON");
}

std::string with_fp8_entry(const std::string& factor) {
  return replace(valid_document(), R"("peak_tflops")",
                 R"("gemm_efficiency": {"tensor_core_fp8": {
      "peak_fraction": {"value": 0.8, "provenance": "measured", "source": "t"},
      "pipeline_depth_k": {"value": 256, "provenance": "measured", "source": "t"},
      "split_accumulator_time_factor": {"value": )" +
                     factor + R"(, "provenance": "estimate", "source": "u"}}},
    "peak_tflops")");
}

TEST(DeviceSpec, ReadsTheFp8GemmEntry) {
  EXPECT_FALSE(parse_device_json(valid_document(), "good.json").fp8_gemm_efficiency);
  const DeviceSpec device = parse_device_json(with_fp8_entry("1.2"), "good.json");
  ASSERT_TRUE(device.fp8_gemm_efficiency);
  EXPECT_DOUBLE_EQ(device.fp8_gemm_efficiency->terms.peak_fraction.value, 0.8);
  EXPECT_DOUBLE_EQ(device.fp8_gemm_efficiency->terms.fixed_latency_us.value, 0);
  EXPECT_DOUBLE_EQ(device.fp8_gemm_efficiency->split_accumulator_time_factor.value, 1.2);
  EXPECT_EQ(device.fp8_gemm_efficiency->split_accumulator_time_factor.provenance,
            Provenance::kEstimate);
  EXPECT_TRUE(device.gemm_efficiency.empty());  // the FP8 entry is no math unit of its own
  expect_error(with_fp8_entry("0.9"),
               "/gemm_efficiency/tensor_core_fp8/split_accumulator_time_factor/value", "[1, 4]");
  const DeviceSpec h100 = find_device(kDeviceFolder, "H100-SXM");
  ASSERT_TRUE(h100.fp8_gemm_efficiency);
  EXPECT_EQ(h100.fp8_gemm_efficiency->terms.peak_fraction.provenance, Provenance::kMeasured);
}

}  // namespace
}  // namespace perfsim::devices
