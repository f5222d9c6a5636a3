// The optional conv_efficiency block of a device file (src/devices/device_spec.hpp): read per
// math unit, fixed latency optional, and every bad value named by its JSON pointer.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "devices/device_spec.hpp"
#include "perfsim/error.hpp"

namespace perfsim::devices {
namespace {

std::string v100_text() {
  std::ifstream in(std::string(PERFSIM_SOURCE_DIR) + "/configs/devices/V100-SXM2.json");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

void expect_error(const std::string& text, const std::string& location,
                  const std::string& problem) {
  try {
    parse_device_json(text, "bad.json");
    FAIL() << "accepted a document that should fail at " << location;
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), location);
    EXPECT_NE(error.problem().find(problem), std::string::npos) << error.what();
  }
}

TEST(DeviceConvEfficiency, ShippedV100CarriesBothUnits) {
  const DeviceSpec v100 = parse_device_json(v100_text(), "V100-SXM2.json");
  ASSERT_TRUE(v100.conv_efficiency.contains(MathUnit::kTensorCore));
  ASSERT_TRUE(v100.conv_efficiency.contains(MathUnit::kCudaCore));
  const ConvEfficiency& cuda = v100.conv_efficiency.at(MathUnit::kCudaCore);
  EXPECT_EQ(cuda.peak_fraction.provenance, Provenance::kMeasured);
  EXPECT_LE(cuda.fast_algorithm_flop_fraction.value, 1.0);
  EXPECT_GE(cuda.max_split_k.value, 1.0);
}

TEST(DeviceConvEfficiency, BadValuesNameTheirPointer) {
  const std::string text = v100_text();
  const std::string cuda = R"("cuda_core": {
      "peak_fraction": {
        "value": )";
  expect_error(replace_once(text, cuda, cuda + "1.5, \"x\": "),
               "/conv_efficiency/cuda_core/peak_fraction/x", "unknown field");
  expect_error(replace_once(text, R"("conv_efficiency": {)", R"("conv_efficiency": {"npu": {},)"),
               "/conv_efficiency/npu", "unknown field");
}

TEST(DeviceConvEfficiency, FastFractionAboveOneIsRejected) {
  std::string text = v100_text();
  const std::string fraction = R"("fast_algorithm_flop_fraction": {
        "value": )";
  const std::size_t at = text.find(fraction);
  ASSERT_NE(at, std::string::npos);
  const std::size_t value_at = at + fraction.size();
  const std::size_t value_end = text.find(',', value_at);
  text.replace(value_at, value_end - value_at, "1.5");
  expect_error(text, "/conv_efficiency/tensor_core/fast_algorithm_flop_fraction/value",
               "at most 1");
}

}  // namespace
}  // namespace perfsim::devices
