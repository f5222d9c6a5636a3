#include "trace_io/execution_trace_loader.hpp"

#include <algorithm>

#include <simdjson.h>

#include "io/checked_number.hpp"
#include "perfsim/error.hpp"
#include "trace_io/et_arguments.hpp"
#include "trace_io/et_communication.hpp"
#include "trace_io/et_node_reader.hpp"
#include "trace_io/et_structure.hpp"
#include "trace_io/et_tensor_order.hpp"
#include "trace_io/json_error_location.hpp"

namespace perfsim {
namespace {

namespace dom = simdjson::dom;
using trace_io::EtLayout;
using trace_io::RawArgument;

dom::element require_top_level_field(dom::object top, std::string_view key,
                                     const std::string& file) {
  dom::element value;
  if (top[key].get(value))
    throw InputError(file, "top level", "missing field \"" + std::string(key) + "\"");
  return value;
}

Trace parse_execution_trace(dom::parser& parser, const io::InputBytes& input,
                            std::optional<int> rank) {
  const std::string& file = input.source;
  simdjson::padded_string json(input.bytes);
  dom::element root;
  if (auto error = parser.parse(json).get(root)) {
    std::size_t offset = trace_io::locate_json_error(json);
    std::string location = "byte " + std::to_string(offset);
    if (offset >= json.size())
      location += " (end of input)";
    throw InputError(file, location,
                     std::string("invalid JSON: ") + simdjson::error_message(error));
  }
  dom::object top;
  if (root.get_object().get(top))
    throw InputError(file, "top level", "expected a JSON object with \"schema\" and \"nodes\"");
  std::string_view schema;
  if (require_top_level_field(top, "schema", file).get_string().get(schema))
    throw InputError(file, "field schema", "schema is not a string");
  std::optional<EtLayout> layout = trace_io::layout_for_schema(schema);
  if (!layout)
    throw InputError(
        file, "field schema",
        "unsupported schema \"" + std::string(schema) + "\" (supported: 1.0.x and 1.1.x-chakra.*)");
  dom::array nodes;
  if (require_top_level_field(top, "nodes", file).get_array().get(nodes))
    throw InputError(file, "field nodes", "nodes is not a list");
  if (nodes.size() == 0)  // an empty trace would predict 0 us
    throw InputError(file, "field nodes", "holds no node: nothing to simulate");

  std::vector<trace_io::EtNode> records;
  records.reserve(nodes.size());
  std::size_t index = 0;
  for (dom::element node : nodes)
    records.push_back(trace_io::read_et_node(node, index++, *layout, file));
  // Execution order is id order; sort positions, then move each record once.
  std::vector<std::size_t> order(records.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&records](std::size_t a, std::size_t b) {
    return records[a].op.id < records[b].op.id;
  });

  Trace trace;
  trace.source = file;
  trace.format = "pytorch-et/" + std::string(schema);
  trace.ops.reserve(records.size());
  std::vector<std::vector<RawArgument>> raw_inputs;
  raw_inputs.reserve(records.size());
  for (std::size_t position : order) {
    trace.ops.push_back(std::move(records[position].op));
    raw_inputs.push_back(std::move(records[position].raw_inputs));
  }
  trace_io::link_op_tree(trace.ops, file, *layout == EtLayout::kFlat ? "parent" : "ctrl_deps");
  for (Op& op : trace.ops)
    op.is_annotation = trace_io::is_annotation_node(op);
  trace_io::CommunicationSummary comms =
      trace_io::attach_communication(trace.ops, raw_inputs, file);
  // perfsim's writer adds "rank" and "world_size" at the top level (traces with only
  // send/recv record no rank of their own); PyTorch's traces have neither.
  std::int64_t written_rank = -1;
  std::int64_t written_world = 0;
  if (top["rank"].get_int64().get(written_rank))
    written_rank = -1;
  if (top["world_size"].get_int64().get(written_world))
    written_world = 0;
  if (written_rank >= io::kMaxRanks)
    throw InputError(file, "field rank", std::to_string(written_rank) + " is out of range");
  io::checked_integer(written_world, 0, io::kMaxRanks, file, "field world_size");
  std::optional<int> trace_rank = comms.recorded_rank;
  if (written_rank >= 0)
    trace_rank = static_cast<int>(written_rank);
  trace.rank = rank.value_or(trace_rank.value_or(0));
  trace.world_size = std::max({1, comms.world_size, static_cast<int>(written_world)});
  trace.process_groups = std::move(comms.process_groups);
  trace.reindex();
  trace_io::check_communication_tensor_order(trace, file);
  return trace;
}

}  // namespace

struct ExecutionTraceReader::Parser {
  dom::parser json;
};

ExecutionTraceReader::ExecutionTraceReader() : parser_(std::make_unique<Parser>()) {}
ExecutionTraceReader::~ExecutionTraceReader() = default;
ExecutionTraceReader::ExecutionTraceReader(ExecutionTraceReader&&) noexcept = default;
ExecutionTraceReader& ExecutionTraceReader::operator=(ExecutionTraceReader&&) noexcept = default;

Trace ExecutionTraceReader::load(const io::InputBytes& input, std::optional<int> rank) {
  return parse_execution_trace(parser_->json, input, rank);
}

Trace load_execution_trace(const io::InputBytes& input, std::optional<int> rank) {
  return ExecutionTraceReader().load(input, rank);
}

Trace load_execution_trace_file(const std::string& spec, std::optional<int> rank) {
  return load_execution_trace(io::read_input(spec), rank);
}

}  // namespace perfsim
