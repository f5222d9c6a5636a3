#pragma once
// What a live tensor is for, as far as a trace lets us tell (heuristics in tensor_lifetimes.hpp).
#include <array>
#include <cstdint>
#include <optional>
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
// The category memory_category_name calls `name`, if any.
std::optional<MemoryCategory> memory_category_named(std::string_view name);

// A generated trace declares its persistent tensors (weights, gradient buffer, optimizer state)
// with one annotation op per category carrying this attribute (its memory_category_name) and
// listing the storages as inputs; tensor_lifetimes.hpp says what a declaration changes.
inline constexpr std::string_view kDeclaredCategoryAttribute = "perfsim_memory_category";

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
