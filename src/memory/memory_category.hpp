#pragma once
// What a live tensor is for, as far as a trace lets us tell (heuristics in tensor_lifetimes.hpp).
#include <array>
#include <cstdint>
#include <string_view>

#include "perfsim/units.hpp"

namespace perfsim::memory {

enum class MemoryCategory : std::uint8_t {
  kParameters,
  kGradients,
  kOptimizerState,
  kActivations,  // forward activations kept for backward, and their gradients in backward
  kCommunication,
  kWorkspace,  // temporaries that die inside the op that made them
  kOther,
};
inline constexpr std::size_t kMemoryCategoryCount = 7;

std::string_view memory_category_name(MemoryCategory category);

// Bytes per category, indexed by MemoryCategory.
struct CategoryBytes {
  std::array<Bytes, kMemoryCategoryCount> bytes{};

  Bytes& operator[](MemoryCategory category) { return bytes[static_cast<std::size_t>(category)]; }
  Bytes operator[](MemoryCategory category) const {
    return bytes[static_cast<std::size_t>(category)];
  }
  Bytes total() const;
};

}  // namespace perfsim::memory
