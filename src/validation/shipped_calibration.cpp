#include "validation/shipped_calibration.hpp"

#include <array>

namespace perfsim::validation {
namespace {

// configs/assets/llm_calibration.json
constexpr std::string_view kA100Json = R"json({
  "schema": "perfsim-llm-calibration/1",
  "host_us_per_op": 56.0,
  "host_us_per_collective": 0.0,
  "host_us_per_micro_batch": 4750.0,
  "iteration_us": 0.0,
  "gemm_time_scale": 1.1,
  "device": "A100-80GB",
  "fitted_on": "vtrain-singlenode-a100.csv",
  "fitted_rows": 720,
  "fit_mean_abs_error": 0.07918493273023199,
  "note": "CPU time per top-level op, extra per communication call, per micro-batch load (after a host wait), a fixed per-iteration cost, and measured over modelled GEMM time on `device` (applied to that device only). Fitted by `perfsim validate runs --fit-calibration`; fit_mean_abs_error is in-sample."
}
)json";

// configs/assets/llm_calibration-h100.json
constexpr std::string_view kH100Json = R"json({
  "schema": "perfsim-llm-calibration/1",
  "host_us_per_op": 80.0,
  "host_us_per_collective": 0.0,
  "host_us_per_micro_batch": 7250.0,
  "iteration_us": 0.0,
  "gemm_time_scale": 1.04,
  "device": "H100-SXM",
  "fitted_on": "published-dev-dgxc-h100.csv",
  "fitted_rows": 10,
  "fit_mean_abs_error": 0.025713354201924853,
  "note": "CPU time per top-level op, extra per communication call, per micro-batch load (after a host wait), a fixed per-iteration cost, and measured over modelled GEMM time on `device` (applied to that device only). Fitted by `perfsim validate runs --fit-calibration`; fit_mean_abs_error is in-sample."
}
)json";

ShippedCalibration parsed(ShippedCalibration shipped) {
  shipped.calibration = parse_calibration(shipped.json, "<embedded> " + std::string(shipped.path));
  return shipped;
}

}  // namespace

std::span<const ShippedCalibration> shipped_calibrations() {
  // Fitted on vTrain's calibration half (Megatron-DeepSpeed, eager PyTorch, one DGX A100) and on
  // the dense H100 development table (NeMo / Megatron-Core with Transformer Engine on DGX H100
  // clusters); H200 runs on the same Hopper host platform and software take the latter.
  static const std::array<ShippedCalibration, 2> kShipped{
      parsed({kShippedCalibrationPath,
              kA100Json,
              {},
              "Megatron-DeepSpeed, eager PyTorch, DGX A100",
              {}}),
      parsed({"configs/assets/llm_calibration-h100.json",
              kH100Json,
              {"H100-SXM", "H200"},
              "NeMo / Megatron-Core with Transformer Engine, DGX H100",
              {}}),
  };
  return kShipped;
}

const ShippedCalibration& shipped_calibration_for(std::string_view device_name) {
  const std::span<const ShippedCalibration> shipped = shipped_calibrations();
  for (const ShippedCalibration& calibration : shipped)
    for (std::string_view device : calibration.devices)
      if (device == device_name)
        return calibration;
  return shipped.front();
}

}  // namespace perfsim::validation
