#pragma once
// Pieces of hand-written trace JSON shared by the Chrome and Kineto timeline writers, which
// stream events one at a time instead of building a document.
#include <cstdio>
#include <string>
#include <string_view>

namespace perfsim::results {

inline std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Microseconds with nanosecond digits, as PyTorch's profiler writes them.
inline std::string json_us(double value_us) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", value_us);
  return buffer;
}

}  // namespace perfsim::results
