// Chakra protobuf writer: the nodes of perfsim's PyTorch-ET document (host ops), then one
// device node per kernel, framed as Chakra's encodeMessage frames them.
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "et_def.pb.h"
#include "io/atomic_file.hpp"
#include "trace_io/chakra_et.hpp"
#include "trace_io/delimited_messages.hpp"
#include "trace_io/et_document.hpp"

namespace perfsim {
namespace {

namespace pb = ChakraProtoMsg;
using nlohmann::json;

constexpr std::string_view kGroupInitName = "## process_group:init ##";

void append_delimited_message(std::string& out, const google::protobuf::MessageLite& message) {
  trace_io::append_delimited(out, message.SerializeAsString());
}

void add_int(pb::Node& node, const std::string& name, std::int64_t value) {
  pb::AttributeProto* attr = node.add_attr();
  attr->set_name(name);
  attr->set_int64_val(value);
}

void add_int32(pb::Node& node, const std::string& name, std::int32_t value) {
  pb::AttributeProto* attr = node.add_attr();
  attr->set_name(name);
  attr->set_int32_val(value);
}

void add_string(pb::Node& node, const std::string& name, const std::string& value) {
  pb::AttributeProto* attr = node.add_attr();
  attr->set_name(name);
  attr->set_string_val(value);
}

void add_bool(pb::Node& node, const std::string& name, bool value) {
  pb::AttributeProto* attr = node.add_attr();
  attr->set_name(name);
  attr->set_bool_val(value);
}

// A JSON document attribute {"name", "type", "value"} as a Chakra attribute: integers as
// int64_val (as the converter writes rf_id, tid, ...; uint64_val past the int64 range),
// reals as double_val, text as string_val.
void add_document_attribute(pb::Node& node, const json& attribute) {
  const std::string& name = attribute.at("name").get_ref<const std::string&>();
  const json& value = attribute.at("value");
  pb::AttributeProto* attr = node.add_attr();
  attr->set_name(name);
  if (value.is_number_unsigned() &&
      value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    attr->set_uint64_val(value.get<std::uint64_t>());
  else if (value.is_number_integer())
    attr->set_int64_val(value.get<std::int64_t>());
  else if (value.is_number_float())
    attr->set_double_val(value.get<double>());
  else if (value.is_boolean())
    attr->set_bool_val(value.get<bool>());
  else if (value.is_string())
    attr->set_string_val(value.get<std::string>());
  else
    attr->set_string_val(value.dump());
}

void set_io(pb::IOInfo& io, const json& lists) {
  io.set_values(lists.at("values").dump());
  io.set_shapes(lists.at("shapes").dump());
  io.set_types(lists.at("types").dump());
}

pb::Node host_node(const json& document_node) {
  pb::Node node;
  node.set_id(document_node.at("id").get<std::uint64_t>());
  node.set_name(document_node.at("name").get<std::string>());
  node.set_type(node.name() == kGroupInitName ? pb::METADATA_NODE : pb::COMP_NODE);
  const std::int64_t parent = document_node.at("ctrl_deps").get<std::int64_t>();
  if (parent > 0 && parent != trace_io::kEtProcessRootId)
    node.add_ctrl_deps(static_cast<std::uint64_t>(parent));
  set_io(*node.mutable_inputs(), document_node.at("inputs"));
  set_io(*node.mutable_outputs(), document_node.at("outputs"));
  for (const json& attribute : document_node.at("attrs"))
    add_document_attribute(node, attribute);
  add_bool(node, "is_cpu_op", true);
  return node;
}

// Chakra's converter orders host nodes by a depth-first walk of the call tree from each root
// (children in id order) and makes each depend on the host node visited before it. Returns
// the walk's order.
std::vector<std::uint64_t> chain_host_nodes(std::map<std::uint64_t, pb::Node>& nodes) {
  std::map<std::uint64_t, std::vector<std::uint64_t>> children;
  std::vector<std::uint64_t> roots;
  for (const auto& [id, node] : nodes) {
    if (node.ctrl_deps_size() > 0 && nodes.count(node.ctrl_deps(0)))
      children[node.ctrl_deps(0)].push_back(id);  // ids ascend: children stay in id order
    else
      roots.push_back(id);
  }
  std::vector<std::uint64_t> order;
  order.reserve(nodes.size());
  for (std::uint64_t root : roots) {
    std::vector<std::uint64_t> stack{root};
    std::optional<std::uint64_t> previous;
    while (!stack.empty()) {
      const std::uint64_t id = stack.back();
      stack.pop_back();
      order.push_back(id);
      if (previous)
        nodes.at(id).add_data_deps(*previous);
      previous = id;
      auto found = children.find(id);
      if (found != children.end())
        stack.insert(stack.end(), found->second.rbegin(), found->second.rend());
    }
  }
  return order;
}

// Node ids in the walk's order, each launching op followed by its kernels: dependencies
// then always point to earlier nodes of the file, which a streaming reader (Chakra's feeder)
// resolves as it goes.
void renumber(pb::Node& node, const std::unordered_map<std::uint64_t, std::uint64_t>& new_id) {
  node.set_id(new_id.at(node.id()));
  for (std::uint64_t& dep : *node.mutable_ctrl_deps())
    dep = new_id.at(dep);
  for (std::uint64_t& dep : *node.mutable_data_deps())
    dep = new_id.at(dep);
}

std::int64_t chakra_comm_type(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return pb::ALL_REDUCE;
    case CollectiveKind::kReduce:
      return pb::REDUCE;
    case CollectiveKind::kAllGather:
      return pb::ALL_GATHER;
    case CollectiveKind::kBroadcast:
      return pb::BROADCAST;
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllv:
    case CollectiveKind::kHierarchicalAllToAll:
      return pb::ALL_TO_ALL;
    case CollectiveKind::kReduceScatter:
      return pb::REDUCE_SCATTER;
    case CollectiveKind::kBarrier:
    case CollectiveKind::kSend:
    case CollectiveKind::kRecv:
      return pb::BARRIER;
  }
  return pb::BARRIER;
}

Bytes tensor_bytes(const Op& op) {
  Bytes total = 0;
  for (const TensorRef& tensor : op.inputs)
    total += tensor.bytes();
  for (const TensorRef& tensor : op.outputs)
    total += tensor.bytes();
  return total;
}

double flops_of(const Op& op) {
  const Attribute* flops = op.find_attribute("flops");
  if (flops == nullptr)
    return 0;
  if (const auto* real = std::get_if<double>(&flops->value))
    return *real;
  if (const auto* integer = std::get_if<std::int64_t>(&flops->value))
    return static_cast<double>(*integer);
  return 0;
}

class DeviceNodeWriter {
 public:
  explicit DeviceNodeWriter(const Trace& trace) : trace_(trace) {}

  // The kernels take the ids after their launcher's.

  void write_kernels(const Op& op, std::uint64_t launcher, std::map<std::uint64_t, pb::Node>& out) {
    std::uint64_t next_id = launcher + 1;
    const auto compute_kernels = static_cast<double>(std::count_if(
        op.kernels.begin(), op.kernels.end(),
        [](const Kernel& kernel) { return kernel.category != KernelCategory::kCommunication; }));
    for (const Kernel& kernel : op.kernels) {
      pb::Node node;
      node.set_id(next_id++);
      node.set_name(kernel.name);
      node.add_ctrl_deps(launcher);
      node.add_data_deps(launcher);
      if (kernel.measured_duration_us)
        node.set_duration_micros(
            static_cast<std::uint64_t>(std::llround(std::max(0.0, *kernel.measured_duration_us))));
      add_bool(node, "is_cpu_op", false);
      add_int(node, "stream", kernel.stream);
      if (kernel.category == KernelCategory::kCommunication && op.comm) {
        describe_communication(*op.comm, node);
      } else {
        // Each kernel of the op gets an equal share of its work (generated ops launch one).
        node.set_type(pb::COMP_NODE);
        add_int(node, "num_ops", std::llround(flops_of(op) / compute_kernels));
        pb::AttributeProto* size = node.add_attr();
        size->set_name("tensor_size");
        size->set_uint64_val(static_cast<std::uint64_t>(
            std::llround(static_cast<double>(tensor_bytes(op)) / compute_kernels)));
      }
      add_string(node, "perfsim_kernel_category",
                 std::string(kernel_category_name(kernel.category)));
      if (!kernel.launch_api.empty())
        add_string(node, "perfsim_launch_api", kernel.launch_api);
      out.emplace(node.id(), std::move(node));
    }
  }

 private:
  void describe_communication(const CommInfo& comm, pb::Node& node) {
    add_int(node, "comm_size", comm.bytes_in);
    if (is_point_to_point(comm.kind)) {
      const bool sends = comm.kind == CollectiveKind::kSend;
      node.set_type(sends ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
      add_int32(node, "comm_src", sends ? trace_.rank : comm.peer_rank);
      add_int32(node, "comm_dst", sends ? comm.peer_rank : trace_.rank);
      add_int32(node, "comm_tag", static_cast<std::int32_t>(comm.tag));
      // comm_tag holds c10d's sequence number; the pairing tag (CommInfo::match_tag) travels
      // as perfsim's own attribute, as in the JSON execution trace, only where it is not 0.
      if (comm.match_tag != 0)
        add_int(node, "p2p_match_tag", comm.match_tag);
      return;
    }
    node.set_type(pb::COMM_COLL_NODE);
    add_int(node, "comm_type", chakra_comm_type(comm.kind));
    if (!comm.process_group.empty())
      add_string(node, "pg_name", comm.process_group);
    // Collectives of one group run in order on its communicator.
    auto [previous, first] = last_collective_.try_emplace(comm.process_group, node.id());
    if (!first) {
      node.add_data_deps(previous->second);
      previous->second = node.id();
    }
  }

  const Trace& trace_;
  std::unordered_map<std::string, std::uint64_t> last_collective_;
};

pb::GlobalMetadata metadata_of(const Trace& trace, const json& document) {
  pb::GlobalMetadata metadata;
  metadata.set_version(kChakraEtVersion);
  auto add = [&metadata](const std::string& name) {
    pb::AttributeProto* attr = metadata.add_attr();
    attr->set_name(name);
    return attr;
  };
  add("schema")->set_string_val(document.at("schema").get<std::string>());
  add("pid")->set_uint64_val(0);
  add("time")->set_string_val(document.at("time").get<std::string>());
  add("start_ts")->set_uint64_val(0);
  add("finish_ts")->set_uint64_val(0);
  add("rank")->set_int64_val(trace.rank);
  add("world_size")->set_int64_val(trace.world_size);
  return metadata;
}

std::string chakra_et_bytes(const Trace& trace) {
  const trace_io::EtDocument document = trace_io::build_et_document(trace);
  std::map<std::uint64_t, pb::Node> host;  // by the document's ids
  for (const json& document_node : document.json.at("nodes")) {
    if (document_node.at("id").get<std::int64_t>() == trace_io::kEtProcessRootId)
      continue;  // the converter drops it: nothing depends on it
    pb::Node node = host_node(document_node);
    host.emplace(node.id(), std::move(node));
  }
  const std::vector<std::uint64_t> order = chain_host_nodes(host);
  std::unordered_map<std::uint64_t, const Op*> launched_by;  // document id -> op with kernels
  for (const Op& op : trace.ops) {
    if (!op.kernels.empty())
      launched_by.emplace(static_cast<std::uint64_t>(document.node_of_op.at(op.id)), &op);
  }
  std::unordered_map<std::uint64_t, std::uint64_t> new_id;
  std::uint64_t next_id = 1;
  for (std::uint64_t id : order) {
    new_id.emplace(id, next_id++);
    auto op = launched_by.find(id);
    if (op != launched_by.end())
      next_id += op->second->kernels.size();  // the kernels' ids follow their launcher's
  }
  std::map<std::uint64_t, pb::Node> nodes;  // written in id order, as the converter does
  for (auto& [id, node] : host) {
    renumber(node, new_id);
    nodes.emplace(node.id(), std::move(node));
  }
  DeviceNodeWriter device(trace);
  for (std::uint64_t id : order) {
    auto op = launched_by.find(id);
    if (op != launched_by.end())
      device.write_kernels(*op->second, new_id.at(id), nodes);
  }
  std::string bytes;
  append_delimited_message(bytes, metadata_of(trace, document.json));
  for (const auto& [id, node] : nodes)
    append_delimited_message(bytes, node);
  return bytes;
}

}  // namespace

bool chakra_et_available() {
  return true;
}

void write_chakra_et(const Trace& trace, std::ostream& out) {
  const std::string bytes = chakra_et_bytes(trace);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void write_chakra_et_file(const Trace& trace, const std::string& path) {
  io::write_file_atomically(path, chakra_et_bytes(trace));
}

}  // namespace perfsim
