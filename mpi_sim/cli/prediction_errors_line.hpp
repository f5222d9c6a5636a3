#pragma once

#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include "kernels/accuracy.hpp"

namespace perfsim::cli {

// "12.34%" for a fraction 0.1234.
inline std::string percent_text(double fraction) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << 100.0 * fraction << "%";
  return out.str();
}

// One line of a calibrate report: the label, then the GMAE, mean signed and largest error of
// `errors` over `count` rows named by `row_noun` ("GEMMs", "passes").
inline void print_prediction_errors(const std::string& label, const kernels::RelativeErrors& errors,
                                    int label_width, int max_width, const char* row_noun) {
  std::cout << "  " << std::left << std::setw(label_width) << label << " GMAE " << std::right
            << std::setw(8) << percent_text(errors.gmae) << "  mean signed " << std::setw(8)
            << percent_text(errors.mean_signed) << "  max " << std::setw(max_width)
            << percent_text(errors.max_abs) << "  (" << errors.count << " " << row_noun << ")\n";
}

}  // namespace perfsim::cli
