#pragma once
// The end-to-end calibration (validation/end_to_end_calibration.hpp) applied to a generated LLM
// run: the same host costs and GEMM time scale `perfsim validate runs` predicts with, so that
// `simulate --model`, `plan` and `validate runs` give one number for one layout.
#include <string>
#include <string_view>

#include "devices/device_spec.hpp"
#include "perfsim/host_overheads.hpp"
#include "validation/end_to_end_calibration.hpp"

namespace perfsim::scenario {

// The device a run's GEMMs execute on, as far as the calibration's GEMM scale cares.
struct CalibrationTarget {
  std::string device;          // the device file's name
  bool measured_gemm = false;  // its file carries a gemm_efficiency fitted on its own GEMMs
  bool fp8 = false;            // linear layers in FP8 (a measured H100 peak fraction)
};

// Whether a GEMM efficiency of `device`'s file was fitted on its own measured GEMMs (provenance
// "measured"); terms carried over from the nearest device with a table do not count.
bool has_measured_gemm_efficiency(const devices::DeviceSpec& device);

// A calibration's GEMM time scale holds for the device it was fitted on and, as the nearest
// device with data, for a device whose GEMM efficiency nothing measured (the analytical model's
// 0.88 of peak is an estimate on every device); not where the device file has its own fit, nor
// on FP8 runs, whose GEMM peak fraction comes from a measured H100 benchmark.
bool gemm_scale_applies(const validation::EndToEndCalibration& calibration,
                        const CalibrationTarget& target);

// The GEMM time scale for `target`: the calibration's where it applies, else 1.
double gemm_time_scale_for(const validation::EndToEndCalibration& calibration,
                           const CalibrationTarget& target);

// The measured host time of issuing one kernel (configs/assets/host_launch_dlrm_v100.json's
// host_us_per_op: median of eager one-kernel ops on the DLRM Kineto traces, measured, not fitted;
// unit_shipped_calibration_test checks the two agree). A kernel launched from a C++ loop inside
// a call the per-op cost already covers (TE's per-expert cuBLASLt GEMMs) costs at most this.
inline constexpr double kMeasuredLaunchUs = 13.0;

// The phase (the generator's "phase" attribute) whose ops the C++ autograd engine issues; ops
// of every other phase (forward, recompute, loss, optimizer, gradient reduction, pipeline
// exchanges) are issued from Python.
inline constexpr std::string_view kBackwardPhase = "backward";

// The host costs as the engine's overheads: per op the pooled gap between top-level ops (T1:
// the per forward op cost), more of it before communication ops, and the batch load as the CPU
// time of the get_batch op after its host wait (T5 of an op without kernels); ops of
// kBackwardPhase the per backward op cost instead (a T1 delta per phase, set only where the two
// costs differ); a MoE layer's per-expert GEMM launches (generators::llm::kExpertGemmLaunchOpName)
// and FP8 current scaling's C++ launches (its amax and scale kernels, the per-expert casts after
// the first: kFp8AmaxOpName, kFp8ScaleOpName, kFp8ExpertCastLaunchOpName)
// min(per forward op cost, kMeasuredLaunchUs) in every phase, so that a calibration without host
// costs keeps them free.
HostOverheads with_host_cost(HostOverheads overheads, const validation::CalibrationPoint& point);

// `--calibration VALUE` of simulate, plan and validate runs: "" = the shipped calibration for a
// run on `device_name` (validation::shipped_calibration_for: compiled into the binary), "none" =
// no calibration, else a file written by `perfsim validate runs --fit-calibration`.
validation::EndToEndCalibration calibration_argument(const std::string& value,
                                                     std::string_view device_name);

// One line for the output: what was applied and where it was fitted.
std::string describe_calibration(const validation::EndToEndCalibration& calibration);

}  // namespace perfsim::scenario
