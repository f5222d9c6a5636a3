#pragma once
// The end-to-end calibration `perfsim simulate` and `plan` apply by default, compiled into the
// binary so that they need nothing outside it (tests/unit/shipped_calibration_test.cpp checks
// that it is still equal to the file `perfsim validate runs --fit-calibration` wrote).
#include <string>
#include <string_view>

namespace perfsim::validation {

inline const std::string kShippedCalibrationPath = "configs/assets/llm_calibration.json";

std::string_view shipped_calibration_json();

}  // namespace perfsim::validation
