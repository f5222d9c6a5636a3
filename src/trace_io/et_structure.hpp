#pragma once
// The op tree of an execution trace: checks and links parent/child ids, and marks the ops
// that are annotations rather than work.
#include <string>
#include <vector>

#include "perfsim/trace.hpp"

namespace perfsim::trace_io {

// `ops` sorted by id. Rejects duplicate ids, parents that name no node and parent cycles
// (InputError naming the node and field `parent_field`). A node that names itself as parent
// (the ET process root does) or names parent 0 or -1 when no such node exists becomes a root.
// Fills child_ids in id order.
void link_op_tree(std::vector<Op>& ops, const std::string& file, const std::string& parent_field);

// Process and thread roots, "## ... ##" ranges, ProfilerStep#N and other user-scope
// record_function ranges (attribute scope == 7).
bool is_annotation_node(const Op& op);

}  // namespace perfsim::trace_io
