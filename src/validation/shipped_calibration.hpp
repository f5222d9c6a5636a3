#pragma once
// The end-to-end calibrations `perfsim simulate`, `plan` and `validate runs` apply by default,
// compiled into the binary so that they need nothing outside it
// (tests/unit/shipped_calibration_test.cpp checks that each is still equal to the file
// `perfsim validate runs --fit-calibration` wrote).
//
// Host costs are CPU time of a framework on a host, and the GEMM scale belongs to a device, so
// there is one calibration per platform with measured runs behind it: a run takes the one fitted
// on its platform's runs, else the fallback (the first), as the nearest platform with data.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "validation/end_to_end_calibration.hpp"

namespace perfsim::validation {

struct ShippedCalibration {
  std::string_view path;  // the repository file, relative to the source root
  std::string_view json;  // its text, compiled in
  // Device files (by name) whose runs this calibration's platform describes; empty = the
  // fallback for every other device.
  std::vector<std::string_view> devices;
  std::string_view platform;        // framework and hosts of the runs it was fitted on
  EndToEndCalibration calibration;  // `json`, parsed once (the first call of shipped_calibrations)
};

// Every shipped calibration, the fallback first.
std::span<const ShippedCalibration> shipped_calibrations();

// The shipped calibration a run on `device_name` (a device file's name) takes.
const ShippedCalibration& shipped_calibration_for(std::string_view device_name);

// The fallback (configs/assets/llm_calibration.json, fitted on vTrain's DGX A100 runs).
inline const std::string kShippedCalibrationPath = "configs/assets/llm_calibration.json";

}  // namespace perfsim::validation
