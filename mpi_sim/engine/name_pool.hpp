#pragma once
// Op, kernel and launch-API names of a program, each stored once: a rank's program has tens
// of thousands of ops but a few hundred distinct names, and a name over 15 characters
// ("cudaLaunchKernel" included) would otherwise cost every op and kernel a heap block.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>

namespace perfsim::engine {

class NamePool {
 public:
  // A view that stays valid as long as the pool lives (nodes of an unordered_set never move).
  std::string_view intern(std::string_view name) {
    auto found = names_.find(name);
    if (found == names_.end())
      found = names_.emplace(name).first;
    return *found;
  }
  std::size_t size() const { return names_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const {
      return std::hash<std::string_view>()(name);
    }
  };
  std::unordered_set<std::string, Hash, std::equal_to<>> names_;
};

}  // namespace perfsim::engine
