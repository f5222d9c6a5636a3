#pragma once
// What one record_param_comms record says about its collective, read from its positional
// inputs (both schemas) and, in 1.1.x-chakra files, its attrs (which take precedence).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfsim/dtype.hpp"
#include "perfsim/trace.hpp"
#include "trace_io/et_arguments.hpp"
#include "trace_io/et_node_location.hpp"

namespace perfsim::trace_io {

// What one record_param_comms says, from its positional inputs and (chakra) its attrs.
// Positional layout, relative to the collective-name string at index p:
//   [input tensors (p-4)], seq (p-3), process group (p-2), rank/root/peer (p-1), name (p),
//   input split sizes (p+1), output split sizes (p+2).
struct CommRecord {
  std::string collective;
  std::string collective_field;
  std::optional<std::int64_t> seq;
  std::optional<std::int64_t> rank_argument;
  std::vector<std::int64_t> in_split;
  std::vector<std::int64_t> out_split;
  std::string split_field;
  std::string group_name;
  std::string group_description;
  std::optional<std::int64_t> group_key;  // 1.0.x: the process-group object's address
  int group_size = 0;
  std::optional<std::int64_t> global_rank_start;
  std::optional<std::int64_t> global_rank_stride;
  DType dtype = DType::kUnknown;
  std::int64_t in_elements = 0;
  std::int64_t out_elements = 0;
  int fallback_element_bytes = 0;
  std::int64_t match_tag = 0;  // perfsim's "p2p_match_tag" (CommInfo::match_tag)
};

// Throws InputError for a record without a collective name or with an unreadable split list.
CommRecord read_comm_record(const Op& op, const std::vector<RawArgument>& raw,
                            const NodeLocation& where);

}  // namespace perfsim::trace_io
