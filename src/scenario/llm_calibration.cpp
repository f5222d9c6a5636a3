#include "scenario/llm_calibration.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "generators/llm/llm_trace_builder.hpp"
#include "perfsim/comm.hpp"
#include "validation/shipped_calibration.hpp"

namespace perfsim::scenario {

bool has_measured_gemm_efficiency(const devices::DeviceSpec& device) {
  for (const auto& [unit, efficiency] : device.gemm_efficiency)
    if (efficiency.peak_fraction.provenance == devices::Provenance::kMeasured)
      return true;
  return false;
}

bool gemm_scale_applies(const validation::EndToEndCalibration& calibration,
                        const CalibrationTarget& target) {
  if (calibration.device.empty())
    return false;
  if (calibration.device == target.device)
    return true;
  return !target.measured_gemm && !target.fp8;
}

double gemm_time_scale_for(const validation::EndToEndCalibration& calibration,
                           const CalibrationTarget& target) {
  return gemm_scale_applies(calibration, target) ? calibration.host.gemm_time_scale : 1.0;
}

HostOverheads with_host_cost(HostOverheads overheads, const validation::CalibrationPoint& point) {
  const double per_op_us = point.host_us_per_forward_op;
  overheads.all_ops.t1 = {per_op_us, 0.0, 1};
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
        CollectiveKind::kAllToAll, CollectiveKind::kBroadcast, CollectiveKind::kSend,
        CollectiveKind::kRecv})
    overheads.per_op["nccl:" + std::string(collective_name(kind))].t1 = {
        per_op_us + point.host_us_per_collective, 0.0, 1};
  overheads.per_op[std::string(generators::llm::kLoadBatchOpName)].t5 = {
      point.host_us_per_micro_batch, 0.0, 1};
  // Kernels launched from C++ inside a call whose own op carries the per-op cost (TE's
  // per-expert GEMMs; FP8 current scaling's amax and scale kernels and per-expert casts), in
  // every phase.
  constexpr std::string_view kCppLaunches[] = {
      generators::llm::kExpertGemmLaunchOpName, generators::llm::kFp8AmaxOpName,
      generators::llm::kFp8ScaleOpName, generators::llm::kFp8ExpertCastLaunchOpName};
  for (std::string_view launch : kCppLaunches)
    overheads.per_op[std::string(launch)].t1 = {std::min(per_op_us, kMeasuredLaunchUs), 0.0, 1};
  // Ops of the backward pass cost what the autograd engine spends instead of the Python path;
  // only where the two differ, so that one cost for every op leaves the overheads as they were.
  if (point.host_us_per_backward_op != point.host_us_per_forward_op) {
    overheads.t1_delta_per_phase_us[std::string(kBackwardPhase)] =
        point.host_us_per_backward_op - point.host_us_per_forward_op;
    for (std::string_view launch : kCppLaunches)
      overheads.t1_phase_exempt.insert(std::string(launch));
  }
  return overheads;
}

validation::EndToEndCalibration calibration_argument(const std::string& value,
                                                     std::string_view device_name) {
  if (value == "none")
    return {};
  if (value.empty()) {
    return validation::shipped_calibration_for(device_name).calibration;
  }
  return validation::load_calibration(value);
}

namespace {

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

// The platform of a shipped calibration (matched by the table it was fitted on), else "".
std::string_view shipped_platform(const validation::EndToEndCalibration& calibration) {
  for (const validation::ShippedCalibration& shipped : validation::shipped_calibrations())
    if (shipped.calibration.fitted_on == calibration.fitted_on)
      return shipped.platform;
  return {};
}

}  // namespace

std::string describe_calibration(const validation::EndToEndCalibration& calibration) {
  if (calibration.fitted_on.empty())
    return "none (kernel, collective and engine models only)";
  const validation::CalibrationPoint& host = calibration.host;
  const std::string per_op = host.host_us_per_forward_op == host.host_us_per_backward_op
                                 ? fixed(host.host_us_per_forward_op, 1) + " us/op"
                                 : fixed(host.host_us_per_forward_op, 1) +
                                       " us/forward op (Python-issued), " +
                                       fixed(host.host_us_per_backward_op, 1) + " us/backward op";
  const std::string_view platform = shipped_platform(calibration);
  return "host " + per_op + " + " + fixed(calibration.host.host_us_per_collective, 0) +
         " us/collective, " + fixed(calibration.host.host_us_per_micro_batch, 0) +
         " us/micro-batch, " + fixed(calibration.iteration_us / 1000.0, 2) + " ms/iteration" +
         (calibration.device.empty()
              ? std::string()
              : ", GEMM time x" + fixed(calibration.host.gemm_time_scale, 2) + " fitted on " +
                    calibration.device + " (applied to its runs, and to devices without GEMM " +
                    "data of their own except on fp8 runs)") +
         ", fitted on " + calibration.fitted_on +
         "; the host terms are CPU time of the framework and hosts that table ran on" +
         (platform.empty() ? std::string() : " (" + std::string(platform) + ")") +
         ", run beside the GPU: they cost time only where the GPU waits for the CPU (after a host "
         "synchronization such as --get-batch-sync, --timer-syncs or the 1F1B batch_p2p_sync, or "
         "when the CPU is the bottleneck)";
}

}  // namespace perfsim::scenario
