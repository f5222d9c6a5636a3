#include "validation/shipped_calibration.hpp"

namespace perfsim::validation {
namespace {

// configs/assets/llm_calibration.json
constexpr std::string_view kShippedCalibrationJson = R"json({
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

}  // namespace

std::string_view shipped_calibration_json() {
  return kShippedCalibrationJson;
}

}  // namespace perfsim::validation
