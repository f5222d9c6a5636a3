#pragma once
// The golden run-table tests' common step: one of configs/validation's tables through
// `validate runs` with the shipped calibrations (each row takes its device's platform's one,
// validation::shipped_calibration_for, as `validate runs` does by default), each row's
// signed error and the summary printed under a label that says which split the table is.
#include <iostream>
#include <memory>
#include <string>

#include "scenario/run_validation.hpp"
#include "validation/end_to_end_calibration.hpp"
#include "validation/run_table.hpp"

namespace perfsim::test_support {

// The report's predictions point at the table's rows: both live here.
struct ShippedTableRun {
  std::unique_ptr<validation::RunTable> table;
  std::string calibration_fitted_on;
  scenario::RunValidationReport report;
};

inline ShippedTableRun validate_shipped_table(const std::string& file, const std::string& split) {
  const std::string root = PERFSIM_SOURCE_DIR;
  ShippedTableRun run;
  run.table = std::make_unique<validation::RunTable>(
      validation::load_run_table(root + "/configs/validation/" + file));
  scenario::RunValidationRequest request;
  request.jobs = 2;
  request.shipped_calibration_by_device = true;
  run.report = scenario::validate_runs(*run.table, request);
  for (const auto& [calibration, devices] : run.report.calibrations_by_device)
    run.calibration_fitted_on +=
        (run.calibration_fitted_on.empty() ? "" : ", ") + calibration.fitted_on;
  const scenario::RunValidationReport& report = run.report;
  for (const scenario::RunPrediction& prediction : report.predictions)
    std::cout << "  " << prediction.row->name << ": "
              << (prediction.skipped.empty() ? std::to_string(100 * prediction.signed_error) + "%"
                                             : "skipped: " + prediction.skipped)
              << "\n";
  std::cout << file << " (" << split << "): " << report.errors.count << " of "
            << report.predictions.size() << " simulated, mean |error| "
            << 100 * report.errors.mean_abs << "%, max " << 100 * report.errors.max_abs
            << "%, mean signed " << 100 * report.errors.mean_signed << "%; calibration fitted on "
            << run.calibration_fitted_on << "\n";
  return run;
}

}  // namespace perfsim::test_support
