#include "trace_io/execution_trace_writer.hpp"

#include <fstream>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "io/atomic_file.hpp"
#include "perfsim/error.hpp"
#include "trace_io/et_document.hpp"

namespace perfsim {
namespace {

using json = nlohmann::json;

constexpr std::int64_t kProcessNodeId = trace_io::kEtProcessRootId;
constexpr std::int64_t kThreadNodeId = 2;
constexpr std::int64_t kGroupInitNodeId = 3;
constexpr std::int64_t kFirstOpNodeId = 4;
constexpr std::int64_t kUserScope = 7;  // RecordScope::USER_SCOPE: marks annotations

// The spelling PyTorch uses inside "Tensor(...)".
std::string torch_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float";
    case DType::kFloat16:
      return "c10::Half";
    case DType::kBFloat16:
      return "c10::BFloat16";
    case DType::kFloat64:
      return "double";
    case DType::kInt64:
      return "long int";
    case DType::kInt32:
      return "int";
    case DType::kInt8:
      return "signed char";
    case DType::kUInt8:
      return "unsigned char";
    case DType::kBool:
      return "bool";
    default:
      return std::string(dtype_name(dtype));
  }
}

// The name of the "dtype" attribute of record_param_comms ("Float", "BFloat16", ...).
std::string comm_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "Float";
    case DType::kFloat16:
      return "Half";
    case DType::kBFloat16:
      return "BFloat16";
    case DType::kFloat64:
      return "Double";
    case DType::kInt64:
      return "Long";
    case DType::kInt32:
      return "Int";
    default:
      return "Byte";
  }
}

json tensor_value(const TensorRef& tensor) {
  return json::array({tensor.tensor_id, tensor.storage_id, tensor.offset_elements, tensor.numel,
                      tensor.element_bytes, tensor.device.empty() ? "cuda:0" : tensor.device});
}

json tensor_type(const TensorRef& tensor) {
  return "Tensor(" + torch_dtype_name(tensor.dtype) + ")";
}

json argument_lists(const std::vector<TensorRef>& tensors) {
  json lists = {{"values", json::array()}, {"shapes", json::array()}, {"types", json::array()}};
  for (const TensorRef& tensor : tensors) {
    lists["values"].push_back(tensor_value(tensor));
    lists["shapes"].push_back(tensor.shape);
    lists["types"].push_back(tensor_type(tensor));
  }
  return lists;
}

json attribute(const std::string& name, const char* type, json value) {
  return {{"name", name}, {"type", type}, {"value", std::move(value)}};
}

json standard_attributes(std::int64_t thread_id, std::int64_t scope) {
  return json::array({attribute("rf_id", "uint64", 0), attribute("fw_parent", "uint64", 0),
                      attribute("seq_id", "int64", -1), attribute("scope", "uint64", scope),
                      attribute("tid", "uint64", thread_id), attribute("fw_tid", "uint64", 0),
                      attribute("op_schema", "string", "")});
}

void append_op_attributes(json& attrs, const Op& op) {
  for (const Attribute& entry : op.attributes) {
    if (entry.name == "scope")
      continue;  // written by standard_attributes
    if (const auto* integer = std::get_if<std::int64_t>(&entry.value))
      attrs.push_back(attribute(entry.name, "int64", *integer));
    else if (const auto* real = std::get_if<double>(&entry.value))
      attrs.push_back(attribute(entry.name, "double", *real));
    else
      attrs.push_back(attribute(entry.name, "string", std::get<std::string>(entry.value)));
  }
}

json node(std::int64_t id, const std::string& name, std::int64_t parent, json inputs, json outputs,
          json attrs) {
  return {{"id", id},
          {"name", name},
          {"ctrl_deps", parent},
          {"inputs", std::move(inputs)},
          {"outputs", std::move(outputs)},
          {"attrs", std::move(attrs)}};
}

// The c10d op PyTorch records around record_param_comms for each collective.
std::string c10d_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "c10d::allreduce_";
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllv:
    case CollectiveKind::kHierarchicalAllToAll:  // no c10d op; the nearest
      return "c10d::alltoall_base_";
    case CollectiveKind::kAllGather:
      return "c10d::_allgather_base_";
    case CollectiveKind::kReduceScatter:
      return "c10d::_reduce_scatter_base_";
    case CollectiveKind::kBroadcast:
      return "c10d::broadcast_";
    case CollectiveKind::kReduce:
      return "c10d::reduce_";
    case CollectiveKind::kBarrier:
      return "c10d::barrier";
    case CollectiveKind::kSend:
      return "c10d::send";
    case CollectiveKind::kRecv:
      return "c10d::recv_";
  }
  return "c10d::unknown";
}

std::string split_text(const std::vector<std::int64_t>& sizes) {
  std::string text = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0)
      text += ", ";
    text += std::to_string(sizes[i]);
  }
  return text + "]";
}

struct RankLayout {
  std::int64_t start = 0;
  std::int64_t stride = 1;
};

// Ranks written as start + i * stride, when the group's ranks are an arithmetic progression.
std::optional<RankLayout> rank_layout(const std::vector<int>& ranks) {
  if (ranks.empty())
    return RankLayout{};
  RankLayout layout{ranks.front(), ranks.size() > 1 ? ranks[1] - ranks[0] : 1};
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] != layout.start + static_cast<std::int64_t>(i) * layout.stride)
      return std::nullopt;
  }
  return layout;
}

class EtWriter {
 public:
  explicit EtWriter(const Trace& trace) : trace_(trace) {
    for (const ProcessGroup& group : trace.process_groups)
      groups_.emplace(group.name, &group);
  }

  trace_io::EtDocument write() {
    nodes_ = json::array();
    nodes_.push_back(node(kProcessNodeId, "[pytorch|profiler|execution_trace|process]", 0,
                          argument_lists({}), argument_lists({}), standard_attributes(0, 0)));
    nodes_.push_back(node(kThreadNodeId, "[pytorch|profiler|execution_trace|thread]",
                          kProcessNodeId, argument_lists({}), argument_lists({}),
                          standard_attributes(1, kUserScope)));
    write_group_init();
    // A collective's record_param_comms takes the id after its op's: readers order nodes by id,
    // and the record's tensors must not look used after everything else (memory replay).
    next_id_ = kFirstOpNodeId;
    for (const Op& op : trace_.ops) {
      et_id_.emplace(op.id, next_id_++);
      if (op.comm)
        ++next_id_;
    }
    for (const Op& op : trace_.ops)
      write_op(op);
    json document = {{"schema", kWrittenEtSchema},      {"pid", 0},
                     {"time", "generated by perfsim"},  {"rank", trace_.rank},
                     {"world_size", trace_.world_size}, {"nodes", std::move(nodes_)}};
    return {std::move(document), std::move(et_id_)};
  }

 private:
  void write_group_init() {
    json groups = json::array();
    for (const ProcessGroup& group : trace_.process_groups) {
      groups.push_back({{"pg_name", group.name},
                        {"pg_desc", group.description},
                        {"backend_config", "cuda:nccl"},
                        {"ranks", group.ranks},
                        {"group_size", group.ranks.empty() ? trace_.world_size
                                                           : static_cast<int>(group.ranks.size())},
                        {"group_count", trace_.process_groups.size()}});
    }
    json inputs = {{"values", json::array({groups.dump()})},
                   {"shapes", json::array({json::array()})},
                   {"types", json::array({"String"})}};
    nodes_.push_back(node(kGroupInitNodeId, "## process_group:init ##", kThreadNodeId,
                          std::move(inputs), argument_lists({}),
                          standard_attributes(1, kUserScope)));
  }

  std::int64_t parent_of(const Op& op) const {
    if (op.parent_id == kNoParent)
      return kThreadNodeId;
    auto found = et_id_.find(op.parent_id);
    return found == et_id_.end() ? kThreadNodeId : found->second;
  }

  void write_op(const Op& op) {
    const std::int64_t id = et_id_.at(op.id);
    const std::int64_t thread = op.thread_id > 0 ? op.thread_id : 1;
    json attrs = standard_attributes(thread, op.is_annotation ? kUserScope : 0);
    append_op_attributes(attrs, op);
    for (const RuntimeCall& call : op.runtime_calls)
      if (is_blocking_runtime_call(call.name))
        attrs.push_back(attribute(std::string(kHostSyncAttribute), "string", call.name));
    if (!op.comm) {
      nodes_.push_back(node(id, op.name, parent_of(op), argument_lists(op.inputs),
                            argument_lists(op.outputs), std::move(attrs)));
      return;
    }
    for (const Kernel& kernel : op.kernels) {
      if (kernel.category == KernelCategory::kCommunication) {
        attrs.push_back(attribute("stream", "int64", kernel.stream));
        break;
      }
    }
    const std::string name = op.name.starts_with("c10d::") ? op.name : c10d_name(op.comm->kind);
    nodes_.push_back(node(id, name, parent_of(op), argument_lists(op.inputs),
                          argument_lists(op.outputs), std::move(attrs)));
    write_record(op, id, thread);
  }

  // record_param_comms as PyTorch 2.x writes it: inputs (tensors, seq, (pg name, pg desc),
  // rank, collective, in splits, out splits, global start, global stride, world size) and the
  // same facts again as attributes.
  void write_record(const Op& op, std::int64_t parent, std::int64_t thread) {
    const CommInfo& comm = *op.comm;
    const bool p2p = is_point_to_point(comm.kind);
    std::string group_description;
    std::optional<RankLayout> layout = RankLayout{};
    if (!p2p) {
      auto group = groups_.find(comm.process_group);
      if (group != groups_.end()) {
        group_description = group->second->description;
        layout = rank_layout(group->second->ranks);
      }
    }
    // The rank argument: the peer for send/recv (global: start 0, stride 1), the root for
    // broadcast/reduce, this rank otherwise (readers take a trace's rank from it).
    std::int64_t rank_argument = trace_.rank;
    if (p2p)
      rank_argument = comm.peer_rank;
    else if (comm.root_rank >= 0 && layout)
      rank_argument = (comm.root_rank - layout->start) / std::max<std::int64_t>(1, layout->stride);
    const std::vector<TensorRef>& tensors = op.inputs;
    json tensor_list = json::array();
    json tensor_shapes = json::array();
    std::string list_type = "GenericList[";
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      tensor_list.push_back(tensor_value(tensors[i]));
      tensor_shapes.push_back(tensors[i].shape);
      list_type += (i > 0 ? "," : "") + tensor_type(tensors[i]).get<std::string>();
    }
    list_type += "]";
    const std::int64_t seq = comm.tag > 0 ? comm.tag : ++sequence_;
    const int element_size = std::max(1, element_bytes(comm.dtype));
    json inputs = {
        {"values",
         json::array({tensor_list, seq, json::array({comm.process_group, group_description}),
                      rank_argument, std::string(collective_name(comm.kind)),
                      comm.in_split_elements, comm.out_split_elements, layout ? layout->start : 0,
                      layout ? layout->stride : 1, comm.group_size})},
        {"shapes",
         json::array({tensor_shapes, json::array(), json::array({json::array(), json::array()}),
                      json::array(), json::array(), json::array(), json::array(), json::array(),
                      json::array(), json::array()})},
        {"types", json::array({list_type, "Int", "Tuple[String,String]", "Int", "String",
                               "GenericList[Int]", "GenericList[Int]", "Int", "Int", "Int"})}};
    json attrs = standard_attributes(thread, 0);
    attrs.push_back(
        attribute("collective_name", "string", std::string(collective_name(comm.kind))));
    attrs.push_back(attribute("dtype", "string", comm_dtype_name(comm.dtype)));
    attrs.push_back(attribute("in_msg_nelems", "uint64", comm.bytes_in / element_size));
    attrs.push_back(attribute("out_msg_nelems", "uint64", comm.bytes_out / element_size));
    attrs.push_back(attribute("in_split_size", "string", split_text(comm.in_split_elements)));
    attrs.push_back(attribute("out_split_size", "string", split_text(comm.out_split_elements)));
    if (layout) {
      attrs.push_back(attribute("global_rank_start", "uint64", layout->start));
      attrs.push_back(attribute("global_rank_stride", "uint64", layout->stride));
    }
    if (!p2p) {
      attrs.push_back(attribute("pg_name", "string", comm.process_group));
      attrs.push_back(attribute("pg_desc", "string", group_description));
    }
    attrs.push_back(attribute("pg_size", "uint64", comm.group_size));
    // perfsim's own: which message stream of the rank pair a send/recv belongs to
    // (CommInfo::match_tag), written only where it is not the pair's one stream.
    if (p2p && comm.match_tag != 0)
      attrs.push_back(attribute("p2p_match_tag", "int64", comm.match_tag));
    nodes_.push_back(node(parent + 1, "record_param_comms", parent, std::move(inputs),
                          argument_lists(op.outputs), std::move(attrs)));
  }

  const Trace& trace_;
  std::unordered_map<std::string, const ProcessGroup*> groups_;
  std::unordered_map<std::int64_t, std::int64_t> et_id_;
  json nodes_;
  std::int64_t next_id_ = kFirstOpNodeId;
  std::int64_t sequence_ = 0;
};

}  // namespace

namespace trace_io {

EtDocument build_et_document(const Trace& trace) {
  return EtWriter(trace).write();
}

}  // namespace trace_io

void write_execution_trace(const Trace& trace, std::ostream& out) {
  out << EtWriter(trace).write().json.dump() << '\n';
}

void write_execution_trace_file(const Trace& trace, const std::string& path) {
  io::write_file_atomically(path, [&](std::ostream& out) { write_execution_trace(trace, out); });
}

}  // namespace perfsim
