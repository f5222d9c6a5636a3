#include "memory/memory_category.hpp"

#include <numeric>

namespace perfsim::memory {

std::string_view memory_category_name(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kParameters:
      return "parameters";
    case MemoryCategory::kGradients:
      return "gradients";
    case MemoryCategory::kOptimizerState:
      return "optimizer state";
    case MemoryCategory::kActivations:
      return "activations";
    case MemoryCategory::kCommunication:
      return "communication buffers";
    case MemoryCategory::kWorkspace:
      return "workspace";
    case MemoryCategory::kOther:
      return "other";
  }
  return "other";
}

std::optional<MemoryCategory> memory_category_named(std::string_view name) {
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) {
    const auto category = static_cast<MemoryCategory>(i);
    if (memory_category_name(category) == name)
      return category;
  }
  return std::nullopt;
}

Bytes CategoryBytes::total() const {
  return std::accumulate(bytes.begin(), bytes.end(), Bytes{0});
}

}  // namespace perfsim::memory
