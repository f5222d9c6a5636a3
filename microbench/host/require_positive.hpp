#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perfsim/error.hpp"

namespace perfsim::microbench {

// A sweep dimension from the command line: not empty, every value above zero. `source` names
// the sweep in the error ("<gemm sweep>"), `option` the dimension.
inline void require_positive(const std::vector<std::int64_t>& values, const char* source,
                             const char* option) {
  if (values.empty())
    throw InputError(source, option, "is empty");
  for (std::int64_t value : values) {
    if (value <= 0)
      throw InputError(source, option, "must be positive, got " + std::to_string(value));
  }
}

}  // namespace perfsim::microbench
