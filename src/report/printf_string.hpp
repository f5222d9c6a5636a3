#pragma once

#include <cstdio>
#include <string>

namespace perfsim::report {

// printf formatting into a std::string, for report cells and chart labels (at most 511 chars).
template <typename... Values>
std::string printf_string(const char* pattern, Values... values) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, pattern, values...);
  return buffer;
}

}  // namespace perfsim::report
