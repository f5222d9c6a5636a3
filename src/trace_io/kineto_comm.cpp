#include "trace_io/kineto_comm.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "io/checked_number.hpp"
#include "perfsim/dtype.hpp"
#include "perfsim/error.hpp"

namespace perfsim::trace_io {
namespace {

constexpr std::int64_t kMaxGroupSize = io::kMaxRanks;

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool is_collective_op_name(std::string_view name) {
  return starts_with(name, "nccl:") || starts_with(name, "c10d::") || name == "record_param_comms";
}

// The ops of one collective's chain, innermost first.
struct CollectiveChain {
  std::vector<Op*> ops;
  Op* annotation = nullptr;  // nccl:*
  Op* c10d = nullptr;        // c10d::*
  Op* record = nullptr;      // record_param_comms
};

// Where a collective's figures come from, for errors: its record_param_comms or annotation.
std::string location_of(const CollectiveChain& chain) {
  const Op* anchor = chain.record != nullptr ? chain.record : chain.annotation;
  if (anchor == nullptr)
    return "collective";
  return "op " + std::to_string(anchor->id) + " (\"" + anchor->name + "\")";
}

CollectiveChain chain_of(Trace& trace, Op& launcher) {
  CollectiveChain chain;
  Op* current = &launcher;
  while (current != nullptr) {
    chain.ops.push_back(current);
    if (starts_with(current->name, "nccl:") && chain.annotation == nullptr)
      chain.annotation = current;
    else if (starts_with(current->name, "c10d::") && chain.c10d == nullptr)
      chain.c10d = current;
    else if (current->name == "record_param_comms" && chain.record == nullptr)
      chain.record = current;
    if (current->parent_id == kNoParent)
      break;
    Op* parent = &trace.ops[static_cast<std::size_t>(trace.position_of(current->parent_id))];
    if (!is_collective_op_name(parent->name))
      break;
    current = parent;
  }
  return chain;
}

// Where the CommInfo goes: the top-most working op of the chain, else the nearest working op
// enclosing the chain.
Op* holder_of(Trace& trace, const CollectiveChain& chain) {
  for (auto it = chain.ops.rbegin(); it != chain.ops.rend(); ++it) {
    if (!(*it)->is_annotation)
      return *it;
  }
  for (std::int64_t parent = chain.ops.back()->parent_id; parent != kNoParent;) {
    Op& op = trace.ops[static_cast<std::size_t>(trace.position_of(parent))];
    if (!op.is_annotation)
      return &op;
    parent = op.parent_id;
  }
  return nullptr;
}

std::optional<std::string> string_attribute(const Op* op, std::string_view name) {
  if (op == nullptr)
    return std::nullopt;
  const Attribute* attribute = op->find_attribute(name);
  if (attribute == nullptr)
    return std::nullopt;
  if (const auto* text = std::get_if<std::string>(&attribute->value))
    return *text;
  if (const auto* number = std::get_if<std::int64_t>(&attribute->value))
    return std::to_string(*number);
  return std::nullopt;
}

std::optional<std::int64_t> integer_attribute(const Op* op, std::string_view name) {
  std::optional<std::string> text = string_attribute(op, name);
  if (!text)
    return std::nullopt;
  std::string_view digits = *text;
  if (!digits.empty() && digits.front() == '"')
    digits = digits.substr(1, digits.size() >= 2 ? digits.size() - 2 : 0);
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size())
    return std::nullopt;
  return value;
}

// "[1, 2, 3]" as newer profilers write split sizes and group ranks. An entry that is not an
// int64 ("-" alone, a number past 2^63) is an error naming the field: skipping it would
// change a split or a group, and from_chars does not advance past it.
std::vector<std::int64_t> integer_list(const std::optional<std::string>& text,
                                       const std::string& source, const std::string& where) {
  std::vector<std::int64_t> values;
  if (!text)
    return values;
  const char* cursor = text->data();
  const char* end = text->data() + text->size();
  while (cursor < end) {
    if ((*cursor >= '0' && *cursor <= '9') || *cursor == '-') {
      std::int64_t value = 0;
      auto result = std::from_chars(cursor, end, value);
      if (result.ec != std::errc()) {
        throw InputError(
            source, where,
            "entry " + std::to_string(values.size()) + " of \"" + *text + "\" is not an integer");
      }
      values.push_back(value);
      cursor = result.ptr;
    } else {
      ++cursor;
    }
  }
  return values;
}

// A size attribute of the collective: absent is fine, but one that is present and not an int64
// (a fraction, a number past 2^63) is an error rather than a silent fall-back to the tensor.
std::optional<std::int64_t> size_attribute(const Trace& trace, const CollectiveChain& chain,
                                           std::string_view name) {
  std::optional<std::int64_t> value = integer_attribute(chain.record, name);
  if (!value) {
    if (std::optional<std::string> text = string_attribute(chain.record, name))
      throw InputError(trace.source, location_of(chain) + " args." + std::string(name),
                       "is not an integer: " + *text);
  }
  return value;
}

std::optional<CollectiveKind> kind_from_kernel(std::string_view kernel_name) {
  // ncclKernel_AllReduce_RING_LL_Sum_float, ncclDevKernel_AllGather_RING_LL
  std::size_t underscore = kernel_name.find('_');
  if (underscore == std::string_view::npos)
    return std::nullopt;
  std::string_view rest = kernel_name.substr(underscore + 1);
  return parse_collective(rest.substr(0, rest.find('_')));
}

std::optional<CollectiveKind> kind_of(const CollectiveChain& chain, const Kernel& kernel) {
  if (std::optional<std::string> name = string_attribute(chain.record, "Collective name")) {
    if (auto kind = parse_collective(*name))
      return kind;
  }
  if (chain.annotation != nullptr) {
    if (auto kind = parse_collective(chain.annotation->name))
      return kind;
  }
  if (chain.c10d != nullptr) {
    if (auto kind = parse_collective(chain.c10d->name))
      return kind;
  }
  return kind_from_kernel(kernel.name);
}

// Element count and dtype of the first input of `op` that is a tensor.
std::optional<TensorRef> first_tensor(const Op* op, std::size_t skip = 0) {
  if (op == nullptr || op->inputs.size() <= skip)
    return std::nullopt;
  return op->inputs[skip];
}

CommInfo comm_info_of(const Trace& trace, const CollectiveChain& chain, CollectiveKind kind) {
  CommInfo comm;
  comm.kind = kind;
  const std::string where = location_of(chain);
  comm.group_size = static_cast<int>(
      io::checked_integer(size_attribute(trace, chain, "Group size").value_or(trace.world_size), 1,
                          kMaxGroupSize, trace.source, where + " args.Group size"));
  comm.process_group = string_attribute(chain.record, "Process Group Name").value_or("");

  // The c10d all-to-all takes (output, input, ...); other c10d ops take tensor lists, which
  // Kineto does not size. The nccl annotation and record_param_comms size the input.
  std::optional<TensorRef> input = first_tensor(chain.annotation);
  if (!input)
    input = first_tensor(chain.record);
  std::optional<TensorRef> output;
  if (kind == CollectiveKind::kAllToAll && chain.c10d != nullptr &&
      chain.c10d->inputs.size() >= 2) {
    output = chain.c10d->inputs[0];
    if (!input)
      input = chain.c10d->inputs[1];
  }
  if (std::optional<std::string> dtype_name = string_attribute(chain.record, "dtype")) {
    if (auto dtype = parse_dtype(*dtype_name))
      comm.dtype = *dtype;
  }
  if (comm.dtype == DType::kUnknown && input)
    comm.dtype = input->dtype;
  std::int64_t element_size = element_bytes(comm.dtype);

  std::optional<std::int64_t> in_elements = size_attribute(trace, chain, "In msg nelems");
  std::optional<std::int64_t> out_elements = size_attribute(trace, chain, "Out msg nelems");
  if (!in_elements && input)
    in_elements = input->numel;
  if (!out_elements && output)
    out_elements = output->numel;
  if (in_elements)
    io::checked_bytes(*in_elements, element_size, trace.source, where + " args.In msg nelems");
  if (out_elements)
    io::checked_bytes(*out_elements, element_size, trace.source, where + " args.Out msg nelems");
  if (!out_elements && in_elements) {
    if (kind == CollectiveKind::kAllGather)
      out_elements = io::checked_product(*in_elements, comm.group_size, io::kMaxElements,
                                         trace.source, where + " all-gather output elements");
    else if (kind == CollectiveKind::kReduceScatter && comm.group_size > 0)
      out_elements = *in_elements / comm.group_size;
    else
      out_elements = in_elements;
  }
  comm.bytes_in =
      io::checked_bytes(in_elements.value_or(0), element_size, trace.source, where + " bytes in");
  comm.bytes_out =
      io::checked_bytes(out_elements.value_or(0), element_size, trace.source, where + " bytes out");

  if (is_point_to_point(kind)) {
    // Newer profilers write the peer's global rank as "Src Rank" (recv) / "Dst Rank" (send).
    const char* peer_key = kind == CollectiveKind::kSend ? "Dst Rank" : "Src Rank";
    if (auto peer = integer_attribute(chain.record, peer_key))
      comm.peer_rank = static_cast<int>(io::checked_integer(
          *peer, 0, io::kMaxRanks - 1, trace.source, where + " args." + peer_key));
  }
  comm.in_split_elements = integer_list(string_attribute(chain.record, "In split size"),
                                        trace.source, where + " args.In split size");
  comm.out_split_elements = integer_list(string_attribute(chain.record, "Out split size"),
                                         trace.source, where + " args.Out split size");
  for (const auto& [splits, field] : {std::pair{&comm.in_split_elements, "In split size"},
                                      std::pair{&comm.out_split_elements, "Out split size"}}) {
    std::int64_t total = 0;
    for (std::int64_t split : *splits) {
      io::checked_bytes(split, element_size, trace.source, where + " args." + field);
      total =
          io::checked_sum(total, split, io::kMaxElements, trace.source, where + " args." + field);
    }
  }
  bool has_splits = !comm.in_split_elements.empty() || !comm.out_split_elements.empty();
  if (comm.kind == CollectiveKind::kAllToAll && (has_splits || comm.bytes_in != comm.bytes_out))
    comm.kind = CollectiveKind::kAllToAllv;
  return comm;
}

// "Process Group Ranks" (or a start/stride with the group size), as newer profilers write on
// record_param_comms: the group's global ranks, so the engine matches it with its members.
void add_process_group(Trace& trace, const CollectiveChain& chain, CommInfo& comm) {
  if (comm.process_group.empty())
    return;
  std::vector<std::int64_t> listed =
      integer_list(string_attribute(chain.record, "Process Group Ranks"), trace.source,
                   location_of(chain) + " args.Process Group Ranks");
  if (listed.empty()) {
    auto start = integer_attribute(chain.record, "Global rank start");
    auto stride = integer_attribute(chain.record, "Global rank stride");
    if (start && stride && comm.group_size > 0) {
      const std::string where = location_of(chain);
      io::checked_integer(*start, 0, io::kMaxRanks - 1, trace.source,
                          where + " args.Global rank start");
      io::checked_integer(*stride, -io::kMaxRanks, io::kMaxRanks, trace.source,
                          where + " args.Global rank stride");
      for (int i = 0; i < comm.group_size; ++i)
        listed.push_back(*start + i * *stride);
    }
  }
  if (listed.empty())
    return;
  for (std::int64_t rank : listed)
    io::checked_integer(rank, 0, io::kMaxRanks - 1, trace.source,
                        location_of(chain) + " args.Process Group Ranks");
  std::vector<int> ranks(listed.begin(), listed.end());
  std::sort(ranks.begin(), ranks.end());
  comm.group_size = static_cast<int>(ranks.size());
  for (const ProcessGroup& group : trace.process_groups) {
    if (group.name == comm.process_group)
      return;
  }
  trace.process_groups.push_back(
      {comm.process_group, std::move(ranks),
       string_attribute(chain.record, "Process Group Description").value_or("")});
}

}  // namespace

CollectiveAttribution attach_collectives(Trace& trace) {
  CollectiveAttribution result;
  trace.reindex();
  // A chain's top op names its collective: kernels under one chain are one collective (grouped
  // SendRecv kernels of an all-to-all), kernels under two chains are two, even when both
  // chains sit in one working op (a compiled backward issuing hundreds of all-reduces).
  std::unordered_map<const Op*, Op*> holder_by_chain;
  std::unordered_set<const Op*> seen_chains;
  for (Op& op : trace.ops) {
    for (const Kernel& kernel : op.kernels) {
      if (kernel.category != KernelCategory::kCommunication)
        continue;
      CollectiveChain chain = chain_of(trace, op);
      const Op* chain_top = chain.ops.back();
      if (!seen_chains.insert(chain_top).second)
        continue;  // one CommInfo per collective, however many kernels it launched
      Op* holder = holder_of(trace, chain);
      if (holder != nullptr && holder->comm) {
        // The enclosing working op already holds an earlier collective: this one goes on its
        // own chain's top op, which the engine finds below the working op.
        holder = const_cast<Op*>(chain_top);
        if (holder->comm)
          holder = nullptr;
      }
      std::optional<CollectiveKind> kind = kind_of(chain, kernel);
      if (!kind) {
        ++result.unidentified;
        continue;
      }
      if (holder == nullptr) {
        ++result.dropped;
        continue;
      }
      holder->comm = comm_info_of(trace, chain, *kind);
      add_process_group(trace, chain, *holder->comm);
      ++result.attached;
    }
  }
  return result;
}

}  // namespace perfsim::trace_io
