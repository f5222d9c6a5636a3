// The calibration compiled into the binary is a copy of the file `perfsim validate runs
// --fit-calibration` wrote: it must stay equal to it, and simulate/plan must apply what it says.
#include <gtest/gtest.h>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "io/input_file.hpp"
#include "scenario/llm_calibration.hpp"
#include "validation/shipped_calibration.hpp"

namespace perfsim {
namespace {

TEST(ShippedCalibration, EmbeddedTextEqualsTheRepositoryFile) {
  ASSERT_EQ(validation::shipped_calibrations().size(), 2u);
  EXPECT_EQ(validation::shipped_calibrations().front().path, validation::kShippedCalibrationPath);
  for (const validation::ShippedCalibration& shipped : validation::shipped_calibrations()) {
    const std::string path = std::string(PERFSIM_SOURCE_DIR) + "/" + std::string(shipped.path);
    EXPECT_EQ(std::string(shipped.json), io::read_file_decompressed(path))
        << path << " changed: copy it into src/validation/shipped_calibration.cpp";
  }
}

// Each run takes the calibration fitted on its platform's runs: the H100 development table's
// for H100-SXM and H200 (same Hopper hosts and software), vTrain's DGX A100 fit for every other
// device, as the nearest platform with data.
TEST(ShippedCalibration, DefaultArgumentIsThePlatformsShippedFileAndNoneIsNothing) {
  const auto file = [](const char* name) {
    return validation::load_calibration(std::string(PERFSIM_SOURCE_DIR) + "/configs/assets/" +
                                        name);
  };
  const validation::EndToEndCalibration a100 = file("llm_calibration.json");
  const validation::EndToEndCalibration h100 = file("llm_calibration-h100.json");
  EXPECT_EQ(a100.fitted_on, "vtrain-singlenode-a100.csv");
  EXPECT_EQ(h100.fitted_on, "published-dev-dgxc-h100.csv");
  for (const char* device : {"A100-80GB", "A100-40GB", "V100-SXM2", "GV100", "unknown"}) {
    const validation::EndToEndCalibration shipped = scenario::calibration_argument("", device);
    EXPECT_EQ(shipped.host, a100.host) << device;
    EXPECT_EQ(shipped.device, a100.device) << device;
    EXPECT_EQ(shipped.fitted_on, a100.fitted_on) << device;
  }
  for (const char* device : {"H100-SXM", "H200"}) {
    const validation::EndToEndCalibration shipped = scenario::calibration_argument("", device);
    EXPECT_EQ(shipped.host, h100.host) << device;
    EXPECT_EQ(shipped.device, h100.device) << device;
    EXPECT_EQ(shipped.fitted_on, h100.fitted_on) << device;
  }
  EXPECT_TRUE(scenario::calibration_argument("none", "H100-SXM").fitted_on.empty());
  // A file given on the command line applies whatever the device.
  const std::string path = std::string(PERFSIM_SOURCE_DIR) + "/configs/assets/llm_calibration.json";
  EXPECT_EQ(scenario::calibration_argument(path, "H100-SXM").fitted_on, a100.fitted_on);
}

TEST(ShippedCalibration, GemmScaleOnlyWhereNothingBetterIsKnown) {
  validation::EndToEndCalibration calibration;
  calibration.device = "A100-80GB";
  calibration.host.gemm_time_scale = 1.1;
  // The fitted device, and a device without a GEMM fit of its own: the scale.
  EXPECT_DOUBLE_EQ(scenario::gemm_time_scale_for(calibration, {"A100-80GB", true, false}), 1.1);
  EXPECT_DOUBLE_EQ(scenario::gemm_time_scale_for(calibration, {"V100", false, false}), 1.1);
  // A device with its own measured fit, or an FP8 run: the models alone.
  EXPECT_DOUBLE_EQ(scenario::gemm_time_scale_for(calibration, {"H100-SXM", true, false}), 1.0);
  EXPECT_DOUBLE_EQ(scenario::gemm_time_scale_for(calibration, {"V100", false, true}), 1.0);
  calibration.device.clear();
  EXPECT_DOUBLE_EQ(scenario::gemm_time_scale_for(calibration, {"A100-80GB", false, false}), 1.0);
}

// Only GEMM terms fitted on the device's own measured GEMMs keep the calibration's scale off it;
// terms carried over from another device (provenance "estimate") do not.
TEST(ShippedCalibration, OnlyMeasuredGemmTermsCount) {
  const std::string folder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";
  EXPECT_TRUE(scenario::has_measured_gemm_efficiency(devices::find_device(folder, "H100-SXM")));
  devices::DeviceSpec a100 = devices::find_device(folder, "A100-80GB");
  EXPECT_FALSE(scenario::has_measured_gemm_efficiency(a100));
  devices::GemmEfficiency carried;
  carried.peak_fraction = {0.89, devices::Provenance::kEstimate, "carried from H100-SXM"};
  a100.gemm_efficiency[devices::MathUnit::kTensorCore] = carried;
  EXPECT_FALSE(scenario::has_measured_gemm_efficiency(a100));
  a100.gemm_efficiency[devices::MathUnit::kTensorCore].peak_fraction.provenance =
      devices::Provenance::kMeasured;
  EXPECT_TRUE(scenario::has_measured_gemm_efficiency(a100));
}

TEST(ShippedCalibration, HostCostsBecomeEngineOverheads) {
  validation::CalibrationPoint point;
  point.host_us_per_forward_op = 50;
  point.host_us_per_backward_op = 50;
  point.host_us_per_collective = 7;
  point.host_us_per_micro_batch = 4000;
  const HostOverheads overheads = scenario::with_host_cost({}, point);
  EXPECT_DOUBLE_EQ(overheads.all_ops.t1.mean_us, 50);
  EXPECT_DOUBLE_EQ(overheads.per_op.at("nccl:all_reduce").t1.mean_us, 57);
  EXPECT_DOUBLE_EQ(overheads.per_op.at("megatron.get_batch").t5.mean_us, 4000);
  // A MoE expert's GEMM launched from TE's C++ loop: the measured launch floor, never more
  // than the per-op cost (so no calibration, no host cost).
  const std::string launch(generators::llm::kExpertGemmLaunchOpName);
  EXPECT_DOUBLE_EQ(overheads.per_op.at(launch).t1.mean_us, scenario::kMeasuredLaunchUs);
  // One cost for every op: no phase adjusts it (the overheads are those of a single cost).
  EXPECT_TRUE(overheads.t1_delta_per_phase_us.empty());
  EXPECT_TRUE(overheads.t1_phase_exempt.empty());
  point.host_us_per_forward_op = point.host_us_per_backward_op = 5;
  EXPECT_DOUBLE_EQ(scenario::with_host_cost({}, point).per_op.at(launch).t1.mean_us, 5);
  point.host_us_per_forward_op = point.host_us_per_backward_op = 0;
  EXPECT_DOUBLE_EQ(scenario::with_host_cost({}, point).per_op.at(launch).t1.mean_us, 0);
}

// A per backward op cost apart from the per forward op one: T1 (and the collectives' T1) is the
// forward cost, ops of the backward phase are adjusted by the difference, and the expert GEMM
// launches from TE's C++ loop keep the launch floor in every phase.
TEST(ShippedCalibration, BackwardOpsGetTheirOwnHostCost) {
  validation::CalibrationPoint point;
  point.host_us_per_forward_op = 60;
  point.host_us_per_backward_op = 24;
  point.host_us_per_collective = 7;
  const HostOverheads overheads = scenario::with_host_cost({}, point);
  EXPECT_DOUBLE_EQ(overheads.all_ops.t1.mean_us, 60);
  EXPECT_DOUBLE_EQ(overheads.per_op.at("nccl:all_reduce").t1.mean_us, 67);
  EXPECT_DOUBLE_EQ(overheads.t1_delta_us(scenario::kBackwardPhase), -36);
  EXPECT_DOUBLE_EQ(overheads.t1_delta_us("forward"), 0);
  EXPECT_DOUBLE_EQ(overheads.t1_delta_us("recompute"), 0);
  const std::string launch(generators::llm::kExpertGemmLaunchOpName);
  EXPECT_TRUE(overheads.t1_phase_exempt_op(launch));
  EXPECT_FALSE(overheads.t1_phase_exempt_op("aten::mm"));
  EXPECT_DOUBLE_EQ(overheads.per_op.at(launch).t1.mean_us, scenario::kMeasuredLaunchUs);
}

// The launch floor is the measured file's per-op cost, not a number of its own.
TEST(ShippedCalibration, LaunchFloorIsTheMeasuredFile) {
  const validation::EndToEndCalibration measured = validation::load_calibration(
      std::string(PERFSIM_SOURCE_DIR) + "/configs/assets/host_launch_dlrm_v100.json");
  EXPECT_EQ(measured.fitted_rows, 0u);  // measured, not fitted on any run table
  EXPECT_DOUBLE_EQ(measured.host.host_us_per_forward_op, scenario::kMeasuredLaunchUs);
  EXPECT_DOUBLE_EQ(measured.host.host_us_per_backward_op, scenario::kMeasuredLaunchUs);
}

}  // namespace
}  // namespace perfsim
