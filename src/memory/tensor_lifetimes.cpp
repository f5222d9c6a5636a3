#include "memory/tensor_lifetimes.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "memory/schema_arguments.hpp"
#include "perfsim/error.hpp"

namespace perfsim::memory {
namespace {

constexpr std::size_t kNoPosition = static_cast<std::size_t>(-1);

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

bool is_communication_op(const Op& op) {
  return op.comm.has_value() || op.name.starts_with("c10d::") || op.name.starts_with("nccl:") ||
         op.name == "record_param_comms";
}

// The phase a name alone says, if any.
std::optional<TracePhase> phase_named(std::string_view name) {
  if (contains(name, "zero_grad"))
    return TracePhase::kZeroGrad;
  if (contains(name, "Optimizer.step") || contains(name, "## optimizer"))
    return TracePhase::kOptimizer;
  if (contains(name, "Backward") || contains(name, "autograd::engine") ||
      contains(name, "AccumulateGrad") || contains(name, "## backward"))
    return TracePhase::kBackward;
  return std::nullopt;
}

// The phase a generated op declares in its "phase" attribute (llm_trace_builder.hpp): the
// pipeline actions, the loss and the recomputation belong to the pass they run in.
std::optional<TracePhase> phase_attribute(const Op& op) {
  const Attribute* attribute = op.find_attribute("phase");
  if (attribute == nullptr)
    return std::nullopt;
  const auto* value = std::get_if<std::string>(&attribute->value);
  if (value == nullptr || value->empty())
    return std::nullopt;
  const std::string_view phase = *value;
  if (contains(phase, "zero_grad"))
    return TracePhase::kZeroGrad;
  if (phase == "optimizer" || phase == "grad-clip" || phase == "param-gather")
    return TracePhase::kOptimizer;
  if (contains(phase, "backward") || phase == "recompute" || phase == "grad-sync")
    return TracePhase::kBackward;
  return TracePhase::kForward;
}

// Storages a trace declares persistent (kDeclaredCategoryAttribute), with their category.
std::unordered_map<std::int64_t, MemoryCategory> declared_storages(const Trace& trace,
                                                                   const std::string& device) {
  std::unordered_map<std::int64_t, MemoryCategory> declared;
  for (const Op& op : trace.ops) {
    const Attribute* attribute = op.find_attribute(kDeclaredCategoryAttribute);
    if (attribute == nullptr)
      continue;
    const auto* name = std::get_if<std::string>(&attribute->value);
    const std::optional<MemoryCategory> category =
        name != nullptr ? memory_category_named(*name) : std::nullopt;
    if (!category)
      throw InputError(trace.source, "op " + std::to_string(op.id),
                       std::string(kDeclaredCategoryAttribute) + " names no memory category");
    for (const TensorRef& ref : op.inputs) {
      if (ref.device == device)
        declared[ref.storage_id] = *category;
    }
  }
  return declared;
}

// Parent positions, phases and top-level ancestors of every op.
struct OpTree {
  std::vector<std::size_t> parent;
  std::vector<TracePhase> phase;
  std::vector<std::size_t> top_level;  // outermost working ancestor (or the op itself)
};

OpTree build_op_tree(const Trace& trace) {
  const std::size_t count = trace.ops.size();
  OpTree tree;
  tree.parent.assign(count, kNoPosition);
  for (std::size_t i = 0; i < count; ++i) {
    const std::ptrdiff_t parent = trace.position_of(trace.ops[i].parent_id);
    if (parent >= 0 && static_cast<std::size_t>(parent) != i)
      tree.parent[i] = static_cast<std::size_t>(parent);
  }
  tree.phase.assign(count, TracePhase::kForward);
  tree.top_level.assign(count, kNoPosition);
  for (std::size_t i = 0; i < count; ++i) {
    std::optional<TracePhase> phase;
    std::size_t top = trace.ops[i].is_annotation ? kNoPosition : i;
    // Parents come before children in an ET, but walk the chain rather than rely on it; the
    // depth bound guards against a cycle the loader did not reject.
    std::size_t depth = 0;
    for (std::size_t at = i; at != kNoPosition && depth < count; at = tree.parent[at], ++depth) {
      if (!phase)
        phase = phase_attribute(trace.ops[at]);
      if (!phase)
        phase = phase_named(trace.ops[at].name);
      if (!trace.ops[at].is_annotation)
        top = at;
    }
    tree.phase[i] = phase.value_or(TracePhase::kForward);
    tree.top_level[i] = top;
  }
  return tree;
}

bool is_inside(const OpTree& tree, std::size_t position, std::size_t ancestor) {
  for (std::size_t at = position, depth = 0; at != kNoPosition && depth <= tree.parent.size();
       at = tree.parent[at], ++depth) {
    if (at == ancestor)
      return true;
  }
  return false;
}

// What the references of one incarnation tell about it.
struct Usage {
  bool zero_grad = false;
  bool communication = false;
  bool accumulate_grad_input = false;
  bool forward = false;
  bool optimizer = false;
  bool made_in_optimizer = false;
  bool made_in_backward = false;
  bool optimizer_state_argument = false;
};

// A trace that declares its persistent tensors names every storage that outlives the iteration:
// the rest are workspace when one op (or the optimizer) makes and drops them, else activations
// (what a communication op carries is an activation or a gradient all the same).
MemoryCategory categorize_undeclared(const TensorLifetime& tensor, const Usage& usage,
                                     const OpTree& tree) {
  if (usage.made_in_optimizer ||
      tree.top_level[tensor.first_position] == tree.top_level[tensor.last_position])
    return MemoryCategory::kWorkspace;
  return MemoryCategory::kActivations;
}

MemoryCategory categorize(const TensorLifetime& tensor, const Usage& usage, const OpTree& tree) {
  if (usage.zero_grad)
    return MemoryCategory::kGradients;
  if (usage.communication)
    return MemoryCategory::kCommunication;
  if (usage.accumulate_grad_input)
    return MemoryCategory::kGradients;
  if (usage.made_in_backward && usage.optimizer)
    return MemoryCategory::kGradients;
  if (tensor.made_before_trace) {
    if (usage.optimizer_state_argument)
      return MemoryCategory::kOptimizerState;
    if (usage.forward)
      return MemoryCategory::kParameters;
    if (usage.optimizer)
      return MemoryCategory::kOptimizerState;
    return MemoryCategory::kOther;
  }
  if (usage.made_in_optimizer ||
      tree.top_level[tensor.first_position] == tree.top_level[tensor.last_position])
    return MemoryCategory::kWorkspace;
  return MemoryCategory::kActivations;
}

}  // namespace

std::string_view trace_phase_name(TracePhase phase) {
  switch (phase) {
    case TracePhase::kForward:
      return "forward";
    case TracePhase::kBackward:
      return "backward";
    case TracePhase::kOptimizer:
      return "optimizer";
    case TracePhase::kZeroGrad:
      return "zero_grad";
  }
  return "forward";
}

std::string busiest_gpu_device(const Trace& trace) {
  std::map<std::string, std::size_t> references;
  for (const Op& op : trace.ops) {
    for (const auto* list : {&op.inputs, &op.outputs})
      for (const TensorRef& tensor : *list)
        if (tensor.on_gpu())
          ++references[tensor.device];
  }
  std::string best;
  std::size_t best_count = 0;
  for (const auto& [device, count] : references) {
    if (count > best_count) {
      best = device;
      best_count = count;
    }
  }
  return best;
}

TraceLifetimes infer_tensor_lifetimes(const Trace& trace, std::string device) {
  if (device.empty())
    device = busiest_gpu_device(trace);
  if (device.empty())
    throw InputError(trace.source, "tensors",
                     "the trace references no GPU tensor (memory needs tensor and storage ids: "
                     "use a PyTorch execution trace, not a Kineto trace)");

  const OpTree tree = build_op_tree(trace);
  const std::unordered_map<std::int64_t, MemoryCategory> declared =
      declared_storages(trace, device);
  // Without declarations a storage first seen as an input predates the trace (a PyTorch trace
  // starts mid-run); with them, only the declared ones do, and any other is made where it is
  // first referenced (a generated operand that stands for a buffer the trace does not make).
  const bool declares = !declared.empty();
  TraceLifetimes result;
  result.device = device;
  result.phase_by_position = tree.phase;

  std::vector<TensorLifetime> tensors;
  std::vector<Usage> usages;
  std::unordered_map<std::int64_t, std::size_t> current;  // storage id -> index in tensors

  auto note_use = [&](std::size_t index, std::size_t position, const TensorRef& ref) {
    TensorLifetime& tensor = tensors[index];
    tensor.last_position = std::max(tensor.last_position, position);
    tensor.bytes = std::max(tensor.bytes, (ref.offset_elements + ref.numel) * ref.element_bytes);
    Usage& usage = usages[index];
    const Op& op = trace.ops[position];
    switch (tree.phase[position]) {
      case TracePhase::kZeroGrad:
        usage.zero_grad = true;
        break;
      case TracePhase::kOptimizer:
        usage.optimizer = true;
        break;
      case TracePhase::kForward:
        usage.forward = usage.forward || !is_communication_op(op);
        break;
      case TracePhase::kBackward:
        break;
    }
    if (is_communication_op(op))
      usage.communication = true;
  };
  auto start = [&](std::int64_t storage, std::size_t position, bool made_before) {
    TensorLifetime tensor;
    tensor.storage_id = storage;
    tensor.first_position = made_before ? 0 : position;
    tensor.last_position = position;
    tensor.made_before_trace = made_before;
    tensor.first_reference_position = position;
    tensors.push_back(tensor);
    Usage usage;
    usage.made_in_optimizer = !made_before && tree.phase[position] == TracePhase::kOptimizer;
    usage.made_in_backward = !made_before && tree.phase[position] == TracePhase::kBackward;
    usages.push_back(usage);
    current[storage] = tensors.size() - 1;
    return tensors.size() - 1;
  };

  for (std::size_t position = 0; position < trace.ops.size(); ++position) {
    const Op& op = trace.ops[position];
    std::unordered_set<std::int64_t> read_storages;
    const Attribute* schema = op.find_attribute("op_schema");
    const std::vector<std::string> argument_names =
        schema != nullptr && std::holds_alternative<std::string>(schema->value)
            ? tensor_argument_names(std::get<std::string>(schema->value), op.inputs.size())
            : std::vector<std::string>{};
    for (std::size_t k = 0; k < op.inputs.size(); ++k) {
      const TensorRef& ref = op.inputs[k];
      if (ref.device != device || ref.numel <= 0 || ref.element_bytes <= 0)
        continue;
      read_storages.insert(ref.storage_id);
      auto it = current.find(ref.storage_id);
      const bool made_before = !declares || declared.contains(ref.storage_id);
      const std::size_t index =
          it != current.end() ? it->second : start(ref.storage_id, position, made_before);
      note_use(index, position, ref);
      if (contains(op.name, "AccumulateGrad"))
        usages[index].accumulate_grad_input = true;
      if (k < argument_names.size() && is_optimizer_state_argument(argument_names[k]))
        usages[index].optimizer_state_argument = true;
    }
    for (const TensorRef& ref : op.outputs) {
      if (ref.device != device || ref.numel <= 0 || ref.element_bytes <= 0)
        continue;
      auto it = current.find(ref.storage_id);
      const bool persistent = declared.contains(ref.storage_id);
      bool fresh = it == current.end();
      if (!fresh && !persistent && ref.offset_elements == 0 &&
          !read_storages.contains(ref.storage_id) &&
          !is_inside(tree, position, tensors[it->second].first_reference_position))
        fresh = true;
      // A declared storage is one allocation for the whole trace: writing it is an update.
      const std::size_t index = fresh ? start(ref.storage_id, position, persistent) : it->second;
      note_use(index, position, ref);
    }
  }

  // What was made before the trace and never replaced lives through the whole iteration.
  const std::size_t last = trace.ops.empty() ? 0 : trace.ops.size() - 1;
  for (const auto& [storage, index] : current) {
    if (tensors[index].made_before_trace)
      tensors[index].last_position = last;
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (auto it = declared.find(tensors[i].storage_id); it != declared.end())
      tensors[i].category = it->second;
    else if (declares)
      tensors[i].category = categorize_undeclared(tensors[i], usages[i], tree);
    else
      tensors[i].category = categorize(tensors[i], usages[i], tree);
  }
  result.tensors = std::move(tensors);
  return result;
}

}  // namespace perfsim::memory
