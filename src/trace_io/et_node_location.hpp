#pragma once
// Where an execution-trace error points: the file, the node id and the field.
#include <cstdint>
#include <string>
#include <string_view>

#include "perfsim/error.hpp"

namespace perfsim::trace_io {

struct NodeLocation {
  const std::string& file;
  std::int64_t node_id;

  // Throws InputError("file", "node 42, field inputs[1]", problem).
  [[noreturn]] void fail(std::string_view field, const std::string& problem) const {
    std::string location = "node " + std::to_string(node_id);
    if (!field.empty())
      location += ", field " + std::string(field);
    throw InputError(file, location, problem);
  }
};

}  // namespace perfsim::trace_io
