#pragma once
// One data-dependency check that the engine relies on: an op that consumes a tensor produced
// by a communication op waits for that communication to end (intra-rank sync), so a GPU
// tensor whose first producer is a communication node must not be consumed by an earlier op.
// Other tensors may legitimately be consumed before any producer appears (parameters, inputs
// made before tracing began), so they are not checked.
#include <string>

#include "perfsim/trace.hpp"

namespace perfsim::trace_io {

// `trace.ops` sorted by id with parents linked. Communication nodes: c10d::*,
// record_param_comms and nccl:*. Throws InputError naming the consuming node, the tensor and
// the producing node. Linear in the number of tensor references.
void check_communication_tensor_order(const Trace& trace, const std::string& file);

}  // namespace perfsim::trace_io
