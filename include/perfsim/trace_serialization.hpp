#pragma once
// cereal serialization of the trace model, for the binary trace cache. Include this (and a
// cereal archive) where a Trace is written or read; the vocabulary headers stay cereal-free.
// Bump kTraceSerializationVersion whenever a serialized field is added, removed or reordered:
// caches written by another version are then ignored and rebuilt.
#include <cstdint>

#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include "perfsim/comm.hpp"
#include "perfsim/tensor.hpp"
#include "perfsim/trace.hpp"

namespace perfsim {

inline constexpr std::uint32_t kTraceSerializationVersion = 2;

template <class Archive>
void serialize(Archive& ar, TensorRef& tensor) {
  ar(tensor.tensor_id, tensor.storage_id, tensor.offset_elements, tensor.numel,
     tensor.element_bytes, tensor.device, tensor.dtype, tensor.shape);
}

template <class Archive>
void serialize(Archive& ar, ProcessGroup& group) {
  ar(group.name, group.ranks, group.description);
}

template <class Archive>
void serialize(Archive& ar, CommInfo& comm) {
  ar(comm.kind, comm.process_group, comm.group_size, comm.dtype, comm.bytes_in, comm.bytes_out,
     comm.in_split_elements, comm.out_split_elements, comm.peer_rank, comm.root_rank, comm.tag,
     comm.match_tag);
}

template <class Archive>
void serialize(Archive& ar, Kernel& kernel) {
  ar(kernel.name, kernel.stream, kernel.category, kernel.correlation_id,
     kernel.measured_duration_us, kernel.measured_start_us, kernel.launch_api,
     kernel.measured_launch_us);
}

template <class Archive>
void serialize(Archive& ar, Attribute& attribute) {
  ar(attribute.name, attribute.value);
}

template <class Archive>
void serialize(Archive& ar, Op& op) {
  ar(op.id, op.name, op.parent_id, op.child_ids, op.thread_id, op.is_annotation, op.inputs,
     op.outputs, op.attributes, op.comm, op.kernels, op.measured_start_us, op.measured_duration_us);
}

template <class Archive>
void serialize(Archive& ar, MeasuredStep& step) {
  ar(step.name, step.start_us, step.duration_us);
}

// The id index of a Trace is derived data: it is not written, and rebuilt after reading.
template <class Archive>
void save(Archive& ar, const Trace& trace) {
  ar(trace.source, trace.format, trace.rank, trace.world_size, trace.ops, trace.process_groups,
     trace.measured_step, trace.device_name);
}

template <class Archive>
void load(Archive& ar, Trace& trace) {
  ar(trace.source, trace.format, trace.rank, trace.world_size, trace.ops, trace.process_groups,
     trace.measured_step, trace.device_name);
  trace.reindex();
}

}  // namespace perfsim
