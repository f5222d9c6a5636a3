// Chakra protobuf reader: host nodes go through the PyTorch-ET JSON loader (one set of rules
// for ops, tensors and collectives whichever form a trace came in); device nodes become the
// kernels of their launching ops.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <limits>
#include <unordered_map>

#include <google/protobuf/stubs/logging.h>
#include <simdjson.h>

#include "et_def.pb.h"
#include "perfsim/error.hpp"
#include "trace_io/chakra/chakra_json_text.hpp"
#include "trace_io/chakra_et.hpp"
#include "trace_io/delimited_messages.hpp"
#include "trace_io/et_node_location.hpp"
#include "trace_io/execution_trace_loader.hpp"
#include "trace_io/python_literal_json.hpp"

namespace perfsim {
namespace {

namespace pb = ChakraProtoMsg;
using trace_io::JsonText;
using trace_io::NodeLocation;

// The layout the JSON document below is built in, when the metadata names no other.
constexpr std::string_view kDocumentSchema = "1.1.0-chakra.0.0.4";

std::string message_location(std::size_t index, const trace_io::DelimitedMessage& message) {
  return "message " + std::to_string(index) + " (byte " + std::to_string(message.prefix_offset) +
         ")";
}

const pb::AttributeProto* find_attr(const pb::Node& node, std::string_view name) {
  for (const pb::AttributeProto& attr : node.attr())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

bool is_communication(const pb::Node& node) {
  return node.type() == pb::COMM_COLL_NODE || node.type() == pb::COMM_SEND_NODE ||
         node.type() == pb::COMM_RECV_NODE;
}

// Work on the device: what the node type says runs there, or what the node says of itself.
bool is_device_node(const pb::Node& node) {
  if (is_communication(node) || node.type() == pb::MEM_LOAD_NODE ||
      node.type() == pb::MEM_STORE_NODE)
    return true;
  const pb::AttributeProto* cpu = find_attr(node, "is_cpu_op");
  return cpu != nullptr && cpu->value_case() == pb::AttributeProto::kBoolVal && !cpu->bool_val();
}

std::string rank_from_file_name_suffix(const std::string& file) {
  // "dir/name.3.et" (Chakra's naming) -> "3"; an archive member's name counts alike.
  std::string name =
      file.substr(file.find_last_of("/:") == std::string::npos ? 0 : file.find_last_of("/:") + 1);
  if (!name.ends_with(".et"))
    return "";
  name.resize(name.size() - 3);
  const std::size_t dot = name.find_last_of('.');
  if (dot == std::string::npos)
    return "";
  return name.substr(dot + 1);
}

std::optional<int> rank_from_file_name(const std::string& file) {
  const std::string digits = rank_from_file_name_suffix(file);
  int rank = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || rank < 0)
    return std::nullopt;
  return rank;
}

struct DecodedTrace {
  pb::GlobalMetadata metadata;
  std::vector<pb::Node> nodes;  // by id
};

DecodedTrace decode(const io::InputBytes& input) {
  const std::string& file = input.source;
  const std::vector<trace_io::DelimitedMessage> messages =
      trace_io::split_delimited(input.bytes, file);
  if (messages.empty())
    throw InputError(file, "byte 0", "empty file: a Chakra trace starts with a GlobalMetadata");
  // A bad file is reported once, as an InputError, not also by protobuf's log on stderr.
  const google::protobuf::LogSilencer quiet;
  DecodedTrace decoded;
  if (!decoded.metadata.ParseFromArray(messages[0].bytes.data(),
                                       static_cast<int>(messages[0].bytes.size())))
    throw InputError(file, message_location(0, messages[0]), "not a Chakra GlobalMetadata message");
  if (messages.size() == 1)  // an empty trace would predict 0 us
    throw InputError(file, "", "holds no node: nothing to simulate");
  decoded.nodes.resize(messages.size() - 1);
  for (std::size_t i = 1; i < messages.size(); ++i) {
    pb::Node& node = decoded.nodes[i - 1];
    if (!node.ParseFromArray(messages[i].bytes.data(), static_cast<int>(messages[i].bytes.size())))
      throw InputError(file, message_location(i, messages[i]), "not a Chakra Node message");
    if (node.id() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw InputError(file, message_location(i, messages[i]),
                       "node id " + std::to_string(node.id()) + " is out of range");
  }
  std::stable_sort(decoded.nodes.begin(), decoded.nodes.end(),
                   [](const pb::Node& a, const pb::Node& b) { return a.id() < b.id(); });
  for (std::size_t i = 1; i < decoded.nodes.size(); ++i) {
    if (decoded.nodes[i].id() == decoded.nodes[i - 1].id())
      NodeLocation{file, static_cast<std::int64_t>(decoded.nodes[i].id())}.fail(
          "id", "duplicate node id");
  }
  return decoded;
}

const pb::AttributeProto* metadata_attr(const pb::GlobalMetadata& metadata, std::string_view name) {
  for (const pb::AttributeProto& attr : metadata.attr())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

class ChakraReader {
 public:
  ChakraReader(const io::InputBytes& input, DecodedTrace decoded)
      : file_(input.source), decoded_(std::move(decoded)) {}

  Trace read(std::optional<int> rank) {
    for (const pb::Node& node : decoded_.nodes) {
      if (!is_device_node(node))
        host_.emplace(node.id(), &node);
    }
    JsonText document;
    begin_document(document);
    bool first = true;
    for (const pb::Node& node : decoded_.nodes) {
      const bool device = is_device_node(node);
      if (device) {
        if (std::optional<std::uint64_t> launcher = host_caller(node)) {
          launcher_of_.emplace(node.id(), *launcher);
          continue;
        }
      }
      if (!first)
        document.raw(",");
      first = false;
      write_node(node, device, document);
      type_of_.emplace(static_cast<std::int64_t>(node.id()), node.type());
    }
    document.raw("]}");
    Trace trace = load_execution_trace(io::InputBytes{file_, std::move(document.text())}, rank);
    trace.format = "chakra-et/" + decoded_.metadata.version();
    mark_annotations(trace);
    attach_device_nodes(trace);
    return trace;
  }

 private:
  std::optional<std::uint64_t> host_caller(const pb::Node& node) const {
    for (std::uint64_t caller : node.ctrl_deps())
      if (host_.count(caller))
        return caller;
    return std::nullopt;
  }

  // {"schema", "pid", "rank"?, "world_size"?, "nodes": [ (left open for the nodes)
  void begin_document(JsonText& out) const {
    std::string schema(kDocumentSchema);
    if (const pb::AttributeProto* attr = metadata_attr(decoded_.metadata, "schema");
        attr != nullptr && attr->string_val().starts_with("1.1.") &&
        attr->string_val().find("-chakra") != std::string::npos)
      schema = attr->string_val();
    out.raw("{\"schema\":").string(schema).raw(",\"pid\":0");
    if (const pb::AttributeProto* attr = metadata_attr(decoded_.metadata, "rank"))
      out.raw(",\"rank\":").attribute_value(*attr);
    else if (std::optional<int> named = rank_from_file_name(file_))
      out.raw(",\"rank\":").integer(*named);
    if (const pb::AttributeProto* attr = metadata_attr(decoded_.metadata, "world_size"))
      out.raw(",\"world_size\":").attribute_value(*attr);
    out.raw(",\"nodes\":[");
  }

  // The node as the JSON loader's 1.1.x-chakra layout has it. A node without a host caller
  // is its own parent (a root).
  void write_node(const pb::Node& node, bool device, JsonText& out) {
    const auto id = static_cast<std::int64_t>(node.id());
    const NodeLocation where{file_, id};
    std::int64_t parent = id;
    for (std::uint64_t caller : node.ctrl_deps()) {
      if (caller != node.id() && host_.count(caller)) {
        parent = static_cast<std::int64_t>(caller);
        break;
      }
    }
    out.raw("{\"id\":").integer(id).raw(",\"name\":").string(node.name());
    out.raw(",\"ctrl_deps\":").integer(parent);
    constexpr std::string_view kEmpty = R"({"values":[],"shapes":[],"types":[]})";
    out.raw(",\"inputs\":");
    if (device)
      out.raw(kEmpty);
    else
      write_io(node.inputs(), where, "inputs", out);
    out.raw(",\"outputs\":");
    if (device)
      out.raw(kEmpty);
    else
      write_io(node.outputs(), where, "outputs", out);
    out.raw(",\"attrs\":[");
    bool first = true;
    for (const pb::AttributeProto& attr : node.attr()) {
      if (attr.name() == "is_cpu_op")
        continue;  // structure, not a property of the op
      out.raw(first ? "{\"name\":" : ",{\"name\":").string(attr.name());
      out.raw(",\"value\":").attribute_value(attr).raw("}");
      first = false;
    }
    out.raw("]}");
  }

  void write_io(const pb::IOInfo& io, const NodeLocation& where, const std::string& side,
                JsonText& out) {
    out.raw("{\"values\":");
    write_list(io.values(), where, side + ".values", out);
    out.raw(",\"shapes\":");
    write_list(io.shapes(), where, side + ".shapes", out);
    out.raw(",\"types\":");
    write_list(io.types(), where, side + ".types", out);
    out.raw("}");
  }

  // An IOInfo list: perfsim writes JSON, Chakra's converter Python's str() of it. Checked
  // here, so that an error names the node and field rather than a place in the document.
  void write_list(const std::string& text, const NodeLocation& where, const std::string& field,
                  JsonText& out) {
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      out.raw("[]");
      return;
    }
    std::optional<std::string> converted = trace_io::python_literal_to_json(text);
    simdjson::dom::element parsed;
    if (!converted || list_parser_.parse(*converted).get(parsed) != simdjson::SUCCESS ||
        !parsed.is_array())
      where.fail(field, "not a list (JSON or Python literal): " + text.substr(0, 80));
    out.raw(*converted);
  }

  // The JSON loader takes every root for an annotation (in PyTorch's traces only the process
  // and thread records are roots). In Chakra traces a root is work unless it is one of those
  // records or metadata.
  void mark_annotations(Trace& trace) const {
    for (Op& op : trace.ops) {
      if (op.parent_id != kNoParent)
        continue;
      auto type = type_of_.find(op.id);
      const bool metadata = type != type_of_.end() && type->second == pb::METADATA_NODE;
      const std::string& name = op.name;
      op.is_annotation = metadata || name.starts_with("[pytorch|profiler|") ||
                         name.starts_with("ProfilerStep#") ||
                         (name.size() >= 4 && name.starts_with("##") && name.ends_with("##"));
    }
  }

  void attach_device_nodes(Trace& trace) const {
    for (const pb::Node& node : decoded_.nodes) {
      if (!is_device_node(node))
        continue;
      auto launcher = launcher_of_.find(node.id());
      const std::uint64_t op_id = launcher == launcher_of_.end() ? node.id() : launcher->second;
      const std::ptrdiff_t position = trace.position_of(static_cast<std::int64_t>(op_id));
      if (position < 0)
        throw RuntimeFailure(file_ + ": node " + std::to_string(op_id) + " was not loaded");
      Op& op = trace.ops[static_cast<std::size_t>(position)];
      op.kernels.push_back(kernel_of(node));
      if (is_communication(node) && !op.comm)
        op.comm = comm_of(node, trace);
    }
  }

  Kernel kernel_of(const pb::Node& node) const {
    Kernel kernel;
    kernel.name = node.name();
    kernel.category = classify_kernel(node.name());
    if (is_communication(node))
      kernel.category = KernelCategory::kCommunication;
    else if (node.type() == pb::MEM_LOAD_NODE || node.type() == pb::MEM_STORE_NODE)
      kernel.category = KernelCategory::kMemory;
    if (const pb::AttributeProto* category = find_attr(node, "perfsim_kernel_category")) {
      for (KernelCategory candidate :
           {KernelCategory::kEmbeddingLookup, KernelCategory::kGemm, KernelCategory::kMemory,
            KernelCategory::kOther, KernelCategory::kCommunication}) {
        if (kernel_category_name(candidate) == category->string_val())
          kernel.category = candidate;
      }
    }
    kernel.stream = kernel.category == KernelCategory::kCommunication ? kDefaultCommStream
                                                                      : kDefaultComputeStream;
    if (std::optional<std::int64_t> stream = integer(node, "stream"))
      kernel.stream = *stream;
    kernel.launch_api = "cudaLaunchKernel";
    if (const pb::AttributeProto* api = find_attr(node, "perfsim_launch_api"))
      kernel.launch_api = api->string_val();
    if (node.duration_micros() > 0)
      kernel.measured_duration_us = static_cast<double>(node.duration_micros());
    return kernel;
  }

  CommInfo comm_of(const pb::Node& node, Trace& trace) const {
    const NodeLocation where{file_, static_cast<std::int64_t>(node.id())};
    CommInfo comm;
    comm.dtype = DType::kUInt8;  // comm_size counts bytes
    const std::int64_t size = integer(node, "comm_size").value_or(0);
    if (size < 0)
      where.fail("comm_size", "negative size " + std::to_string(size));
    comm.bytes_in = size;
    comm.bytes_out = size;
    comm.tag = integer(node, "comm_tag").value_or(0);
    if (node.type() != pb::COMM_COLL_NODE) {
      const bool sends = node.type() == pb::COMM_SEND_NODE;
      comm.kind = sends ? CollectiveKind::kSend : CollectiveKind::kRecv;
      comm.group_size = 2;
      const std::optional<std::int64_t> peer = integer(node, sends ? "comm_dst" : "comm_src");
      if (!peer || *peer < 0 || *peer > std::numeric_limits<int>::max())
        where.fail(sends ? "comm_dst" : "comm_src", "a send or receive needs its peer rank");
      comm.peer_rank = static_cast<int>(*peer);
      const std::int64_t match_tag = integer(node, "p2p_match_tag").value_or(0);
      if (match_tag < 0 || match_tag > std::numeric_limits<std::int32_t>::max())
        where.fail("p2p_match_tag",
                   "must be between 0 and 2147483647, got " + std::to_string(match_tag));
      comm.match_tag = match_tag;
      return comm;
    }
    comm.kind = collective_kind(integer(node, "comm_type"), where);
    if (const pb::AttributeProto* group = find_attr(node, "pg_name"))
      comm.process_group = group->string_val();
    auto known = std::find_if(
        trace.process_groups.begin(), trace.process_groups.end(),
        [&](const ProcessGroup& candidate) { return candidate.name == comm.process_group; });
    if (known == trace.process_groups.end())
      trace.process_groups.push_back({comm.process_group, {}, ""});  // members unknown: world
    else
      comm.group_size = static_cast<int>(known->ranks.size());
    return comm;
  }

  static CollectiveKind collective_kind(std::optional<std::int64_t> type,
                                        const NodeLocation& where) {
    if (!type)
      where.fail("comm_type", "a COMM_COLL_NODE needs comm_type");
    switch (*type) {
      case pb::ALL_REDUCE:
        return CollectiveKind::kAllReduce;
      case pb::REDUCE:
        return CollectiveKind::kReduce;
      case pb::ALL_GATHER:
        return CollectiveKind::kAllGather;
      case pb::BROADCAST:
        return CollectiveKind::kBroadcast;
      case pb::ALL_TO_ALL:
        return CollectiveKind::kAllToAll;
      case pb::REDUCE_SCATTER:
      case pb::REDUCE_SCATTER_BLOCK:
        return CollectiveKind::kReduceScatter;
      case pb::BARRIER:
        return CollectiveKind::kBarrier;
      default:
        break;
    }
    const std::string name = pb::CollectiveCommType_IsValid(static_cast<int>(*type))
                                 ? pb::CollectiveCommType_Name(static_cast<int>(*type))
                                 : std::to_string(*type);
    where.fail("comm_type", "collective " + name + " is not supported by perfsim");
  }

  std::optional<std::int64_t> integer(const pb::Node& node, std::string_view name) const {
    const trace_io::AttributeInteger value = trace_io::attribute_integer(find_attr(node, name));
    const NodeLocation where{file_, static_cast<std::int64_t>(node.id())};
    switch (value.problem) {
      case trace_io::IntegerProblem::kNone:
        return value.value;
      case trace_io::IntegerProblem::kMissing:
        return std::nullopt;
      case trace_io::IntegerProblem::kOutOfRange:
        where.fail(name, "value out of range");
      case trace_io::IntegerProblem::kNotAnInteger:
        break;
    }
    where.fail(name, "not an integer");
  }

  const std::string& file_;
  DecodedTrace decoded_;
  std::unordered_map<std::uint64_t, const pb::Node*> host_;
  std::unordered_map<std::uint64_t, std::uint64_t> launcher_of_;
  std::unordered_map<std::int64_t, pb::NodeType> type_of_;
  simdjson::dom::parser list_parser_;  // reused: IOInfo lists are many and small
};

}  // namespace

Trace load_chakra_et(const io::InputBytes& input, std::optional<int> rank) {
  return ChakraReader(input, decode(input)).read(rank);
}

}  // namespace perfsim
