#pragma once
// `perfsim validate runs --explain NAME`: for each named row, the `perfsim simulate` command
// that predicts the same iteration time (simulate_arguments.hpp) and the row's "where the time
// goes" summary, built by simulate's own report code (simulate_report.hpp) from the simulation
// validate runs already did.
#include <nlohmann/json.hpp>
#include <ostream>

#include "scenario/run_validation.hpp"

namespace perfsim::cli {

void print_explanations(const scenario::RunValidationReport& report, std::ostream& out);

// An array, one object per explained row (README "Validating against measured runs").
nlohmann::ordered_json explanations_json(const scenario::RunValidationReport& report);

}  // namespace perfsim::cli
