#include "trace_io/et_tensor_order.hpp"

#include <unordered_map>

#include "trace_io/et_node_location.hpp"

namespace perfsim::trace_io {
namespace {

bool is_communication_node(const Op& op) {
  return op.name.starts_with("c10d::") || op.name == "record_param_comms" ||
         op.name.starts_with("nccl:");
}

bool is_ancestor(const Trace& trace, std::int64_t ancestor_id, const Op& op) {
  for (std::int64_t parent = op.parent_id; parent != kNoParent;) {
    if (parent == ancestor_id)
      return true;
    const Op* next = trace.find(parent);
    if (next == nullptr)
      return false;
    parent = next->parent_id;
  }
  return false;
}

}  // namespace

void check_communication_tensor_order(const Trace& trace, const std::string& file) {
  // tensor id -> the first op (by position) that consumes it on the GPU.
  std::unordered_map<std::int64_t, std::size_t> first_consumer;
  // tensor id -> the first op that produces it.
  std::unordered_map<std::int64_t, std::size_t> first_producer;
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const Op& op = trace.ops[i];
    for (const TensorRef& tensor : op.inputs) {
      if (tensor.on_gpu())
        first_consumer.emplace(tensor.tensor_id, i);
    }
    for (const TensorRef& tensor : op.outputs)
      first_producer.emplace(tensor.tensor_id, i);
  }
  // In id order, so the first offence in execution order is the one reported.
  for (std::size_t position = 0; position < trace.ops.size(); ++position) {
    const Op& producer = trace.ops[position];
    if (!is_communication_node(producer))
      continue;
    for (const TensorRef& tensor : producer.outputs) {
      if (first_producer.at(tensor.tensor_id) != position)
        continue;
      auto consumer = first_consumer.find(tensor.tensor_id);
      if (consumer == first_consumer.end() || consumer->second >= position)
        continue;
      const Op& early = trace.ops[consumer->second];
      // The collective's own c10d op names its output buffer as an input.
      if (is_ancestor(trace, early.id, producer))
        continue;
      NodeLocation{file, early.id}.fail(
          "inputs", "tensor " + std::to_string(tensor.tensor_id) + " is consumed before node " +
                        std::to_string(producer.id) + " (" + producer.name + ") produces it");
    }
  }
}

}  // namespace perfsim::trace_io
