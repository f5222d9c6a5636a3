#pragma once

#include <cstdint>

namespace perfsim::kernels {

// Whole tiles, waves or output positions needed to cover `a` items in groups of `b` (b > 0).
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace perfsim::kernels
