#pragma once
// Reading one execution-trace node into an Op (name, id, parent, tid, tensors, attributes)
// for either node layout: schema 1.0.x writes fields flat, 1.1.x-chakra nests arguments in
// inputs{values,shapes,types} and attributes in an attrs list.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "perfsim/trace.hpp"
#include "trace_io/et_arguments.hpp"

namespace perfsim::trace_io {

enum class EtLayout { kFlat, kChakra };

// "1.0.x" -> kFlat, "1.1.x-chakra.*" -> kChakra, anything else -> nullopt.
std::optional<EtLayout> layout_for_schema(std::string_view schema);

struct EtNode {
  Op op;
  std::vector<RawArgument> raw_inputs;  // only for communication and process-group nodes
};

// `index`: the node's position in "nodes", for errors about a node without an id. Throws
// InputError naming the node and field.
EtNode read_et_node(simdjson::dom::element element, std::size_t index, EtLayout layout,
                    const std::string& file);

}  // namespace perfsim::trace_io
