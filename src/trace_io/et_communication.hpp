#pragma once
// Communication in an execution trace: CommInfo from record_param_comms records (and from
// c10d:: ops that have no record), wait records, and the process groups of the job.
#include <optional>
#include <string>
#include <vector>

#include "perfsim/comm.hpp"
#include "perfsim/trace.hpp"
#include "trace_io/et_arguments.hpp"

namespace perfsim::trace_io {

struct CommunicationSummary {
  std::optional<int> recorded_rank;  // the rank record_param_comms wrote, when it did
  int world_size = 0;                // 0 = the file does not show it
  std::vector<ProcessGroup> process_groups;
};

// `ops` sorted by id with the tree linked; `raw_inputs[i]` holds the raw arguments of ops[i]
// (empty unless ops[i] is a record_param_comms, a c10d:: op or a process_group:init record).
// Sets Op::comm on one op per collective and marks wait records (see
// execution_trace_loader.hpp). Throws InputError for an unknown collective, split-size lists
// whose length disagrees with the group size, or an unreadable process-group record.
CommunicationSummary attach_communication(std::vector<Op>& ops,
                                          const std::vector<std::vector<RawArgument>>& raw_inputs,
                                          const std::string& file);

}  // namespace perfsim::trace_io
