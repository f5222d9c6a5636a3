#include "trace_io/chakra_json_loader.hpp"

#include <algorithm>
#include <unordered_set>

#include <simdjson.h>

#include "io/checked_number.hpp"
#include "perfsim/error.hpp"
#include "trace_io/et_node_location.hpp"
#include "trace_io/et_structure.hpp"
#include "trace_io/json_error_location.hpp"
#include "trace_io/json_integer.hpp"

namespace perfsim {
namespace {

namespace dom = simdjson::dom;
using trace_io::json_integer_of;
using trace_io::NodeLocation;

struct ChakraNode {
  Op op;
  std::vector<std::int64_t> data_deps;
};

// "ncclKernel_AllReduce_RING_LL_Sum_float(...)" -> kAllReduce; "c10d::broadcast_(0)" ->
// kBroadcast.
std::optional<CollectiveKind> collective_of(std::string_view name) {
  constexpr std::string_view kNcclKernel = "ncclKernel_";
  if (name.starts_with(kNcclKernel)) {
    std::string_view rest = name.substr(kNcclKernel.size());
    return parse_collective(rest.substr(0, rest.find('_')));
  }
  return std::nullopt;
}

std::vector<std::int64_t> read_id_list(dom::element element, const NodeLocation& where,
                                       std::string_view field) {
  dom::array array;
  if (element.get_array().get(array))
    where.fail(field, "expected a list of node ids");
  std::vector<std::int64_t> ids;
  for (dom::element item : array) {
    std::optional<std::int64_t> id = json_integer_of(item);
    if (!id)
      where.fail(field, "node id is not an integer");
    ids.push_back(*id);
  }
  return ids;
}

ChakraNode read_node(dom::element element, std::size_t index, const std::string& file) {
  dom::object node;
  std::string position = "workload_graph[" + std::to_string(index) + "]";
  if (element.get_object().get(node))
    throw InputError(file, position, "node is not an object");
  dom::element id_element;
  std::optional<std::int64_t> id;
  if (!node["Id"].get(id_element))
    id = json_integer_of(id_element);
  if (!id)
    throw InputError(file, position, "node without an integer Id");
  ChakraNode result;
  Op& op = result.op;
  op.id = *id;
  NodeLocation where{file, op.id};
  std::string_view name;
  if (node["Name"].get_string().get(name))
    where.fail("Name", "missing field");
  op.name = std::string(name);
  dom::element type_element;
  std::optional<std::int64_t> node_type;
  if (!node["NodeType"].get(type_element))
    node_type = json_integer_of(type_element);
  if (!node_type)
    where.fail("NodeType", "missing field");
  op.attributes.push_back({"node_type", *node_type});
  bool is_cpu_op = true;
  if (bool flag = false; !node["is_cpu_op"].get_bool().get(flag))
    is_cpu_op = flag;
  op.attributes.push_back({"is_cpu_op", std::int64_t{is_cpu_op ? 1 : 0}});
  std::optional<DurationUs> runtime_us;
  dom::element runtime;
  if (!node["runtime"].get(runtime) && !runtime.is_null()) {
    double value = 0;
    if (runtime.get_double().get(value) || value < 0)
      where.fail("runtime", "runtime is not a non-negative number");
    if (value > io::kMaxDurationUs)
      where.fail("runtime", "runtime " + io::format_number(value) + " us is above the supported " +
                                io::format_number(io::kMaxDurationUs) + " us");
    runtime_us = value;
    op.attributes.push_back({"runtime", value});
  }
  dom::element deps;
  if (!node["data_deps"].get(deps)) {
    result.data_deps = read_id_list(deps, where, "data_deps");
    std::string joined;
    for (std::int64_t dep : result.data_deps)
      joined += (joined.empty() ? "" : ",") + std::to_string(dep);
    op.attributes.push_back({"data_deps", joined});
  }
  dom::element control;
  if (!node["ctrlDeps"].get(control)) {
    std::vector<std::int64_t> parents = read_id_list(control, where, "ctrlDeps");
    if (!parents.empty())
      op.parent_id = parents.front();
  }
  if (is_cpu_op) {
    op.measured_duration_us = runtime_us;
  } else {
    Kernel kernel;
    kernel.name = op.name;
    kernel.category = classify_kernel(op.name);
    kernel.measured_duration_us = runtime_us;
    if (kernel.category == KernelCategory::kCommunication)
      kernel.stream = kDefaultCommStream;
    op.kernels.push_back(std::move(kernel));
  }
  if (*node_type == kChakraCommunicationNode && !is_cpu_op) {
    if (std::optional<CollectiveKind> kind = collective_of(op.name)) {
      CommInfo comm;
      comm.kind = *kind;
      op.comm = comm;
    }
  }
  return result;
}

}  // namespace

Trace load_chakra_json(const io::InputBytes& input, std::optional<int> rank) {
  const std::string& file = input.source;
  simdjson::padded_string json(input.bytes);
  dom::parser parser;
  dom::element root;
  if (auto error = parser.parse(json).get(root)) {
    std::size_t offset = trace_io::locate_json_error(json);
    throw InputError(file, "byte " + std::to_string(offset),
                     std::string("invalid JSON: ") + simdjson::error_message(error));
  }
  dom::array graph;
  dom::element graph_element;
  if (root["workload_graph"].get(graph_element))
    throw InputError(file, "top level", "missing field \"workload_graph\"");
  if (graph_element.get_array().get(graph))
    throw InputError(file, "field workload_graph", "workload_graph is not a list");

  if (graph.size() == 0)  // an empty graph would predict 0 us
    throw InputError(file, "field workload_graph", "holds no node: nothing to simulate");
  std::vector<ChakraNode> nodes;
  nodes.reserve(graph.size());
  std::size_t index = 0;
  for (dom::element element : graph)
    nodes.push_back(read_node(element, index++, file));
  std::sort(nodes.begin(), nodes.end(),
            [](const ChakraNode& a, const ChakraNode& b) { return a.op.id < b.op.id; });
  std::unordered_set<std::int64_t> ids;
  ids.reserve(nodes.size());
  for (const ChakraNode& node : nodes)
    ids.insert(node.op.id);
  Trace trace;
  trace.source = file;
  trace.format = "chakra-json";
  trace.rank = rank.value_or(0);
  if (std::int64_t gpus = 0; !root["ngpus"].get_int64().get(gpus) && gpus > 0)
    trace.world_size = static_cast<int>(io::checked_integer(gpus, 1, io::kMaxRanks, file, "ngpus"));
  trace.ops.reserve(nodes.size());
  for (ChakraNode& node : nodes) {
    NodeLocation where{file, node.op.id};
    for (std::int64_t dep : node.data_deps) {
      if (!ids.count(dep))
        where.fail("data_deps",
                   "dependency on node " + std::to_string(dep) + ", which does not exist");
    }
    trace.ops.push_back(std::move(node.op));
  }
  trace_io::link_op_tree(trace.ops, file, "ctrlDeps");
  trace.reindex();
  trace.process_groups.push_back(ProcessGroup{"", {}, "world"});
  return trace;
}

Trace load_chakra_json_file(const std::string& spec, std::optional<int> rank) {
  return load_chakra_json(io::read_input(spec), rank);
}

}  // namespace perfsim
