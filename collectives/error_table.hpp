#pragma once
// The text table `perfsim fit` and `perfsim validate collectives` print: per sweep and per
// curve region, point count, GMAE, MAPE and std of the relative time error (seed 001 Table I).
#include <string>
#include <vector>

#include "collectives/fitted_curve.hpp"

namespace perfsim::collectives {

struct ErrorTableRow {
  std::string name;
  RegionErrors errors;
};

std::string format_error_table(const std::vector<ErrorTableRow>& rows);

}  // namespace perfsim::collectives
