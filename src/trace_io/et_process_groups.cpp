#include "trace_io/et_process_groups.hpp"

#include <algorithm>

#include <simdjson.h>

#include "trace_io/et_node_location.hpp"

namespace perfsim::trace_io {

ProcessGroupInit read_process_group_init(const Op& op, const std::vector<RawArgument>& raw,
                                         const std::string& file) {
  NodeLocation where{file, op.id};
  ProcessGroupInit init;
  if (raw.empty() || !raw.front().text)
    where.fail("inputs[0]", "process_group:init record without its JSON description");
  simdjson::dom::parser parser;
  simdjson::padded_string json(*raw.front().text);
  simdjson::dom::array groups;
  if (parser.parse(json).get_array().get(groups))
    where.fail("inputs[0]", "process-group description is not a JSON list");
  for (simdjson::dom::element entry : groups) {
    ProcessGroup group;
    std::string_view text;
    if (entry["pg_name"].get_string().get(text))
      where.fail("inputs[0]", "process group without pg_name");
    group.name = std::string(text);
    if (!entry["pg_desc"].get_string().get(text))
      group.description = std::string(text);
    simdjson::dom::array ranks;
    if (!entry["ranks"].get_array().get(ranks)) {
      for (simdjson::dom::element rank : ranks) {
        std::int64_t value = 0;
        if (rank.get_int64().get(value))
          where.fail("inputs[0]", "process group " + group.name + ": rank is not an integer");
        group.ranks.push_back(static_cast<int>(value));
      }
    }
    std::sort(group.ranks.begin(), group.ranks.end());
    std::int64_t size = 0;
    if (!entry["group_size"].get_int64().get(size) &&
        (group.ranks.empty() || group.description == "default_pg"))
      init.world_size = std::max(init.world_size, static_cast<int>(size));
    init.groups.push_back(std::move(group));
  }
  return init;
}

}  // namespace perfsim::trace_io
