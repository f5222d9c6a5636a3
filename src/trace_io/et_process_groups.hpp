#pragma once
// The "## process_group:init ##" record of 1.1.x-chakra traces: a JSON string listing every
// process group (pg_name, pg_desc, ranks, group_size).
#include <string>
#include <vector>

#include "perfsim/comm.hpp"
#include "perfsim/trace.hpp"
#include "trace_io/et_arguments.hpp"

namespace perfsim::trace_io {

struct ProcessGroupInit {
  std::vector<ProcessGroup> groups;
  int world_size = 0;  // the default group's size; 0 when not listed
};

// Throws InputError naming the node and field inputs[0] when the description is missing or is
// not a JSON list of groups with pg_name and integer ranks.
ProcessGroupInit read_process_group_init(const Op& op, const std::vector<RawArgument>& raw,
                                         const std::string& file);

}  // namespace perfsim::trace_io
