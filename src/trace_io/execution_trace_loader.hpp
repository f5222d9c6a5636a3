#pragma once
// PyTorch execution traces (ET): schema 1.0.x (flat node fields: parent, inputs, input_shapes,
// input_types, ...) and 1.1.x-chakra (ctrl_deps, inputs{values,shapes,types}, attrs list).
//
// What the loader fills in a Trace:
// - ops sorted by node id (the execution order of an ET), parent_id / child_ids, thread_id
//   (tid), tensors of inputs/outputs with shape and dtype (lists of tensors flattened), and
//   attributes rf_id, seq_id, scope, op_schema, fw_parent, fw_tid plus every chakra attr.
// - is_annotation: the process and thread roots, "## name ##" and ProfilerStep#N ranges, and
//   every other user-scope record_function range (scope 7, e.g. "DistributedDataParallel.
//   forward", "Optimizer.step#SGD.step"): they do no work themselves. nccl:* nodes (also scope
//   7) are not annotations.
// - CommInfo on exactly one op per collective: the c10d:: op (c10d::allreduce_,
//   c10d::alltoall_base_, ...) when it is the parent of the record_param_comms record, else the
//   record itself; a c10d::alltoall_base_ or c10d::allreduce_ with no record below it takes
//   CommInfo from its own arguments. nccl:* nodes never carry it. Attribute "comm_seq" (and
//   CommInfo::tag) hold the collective's sequence number. All-to-all with empty split lists is
//   kAllToAll, with split lists kAllToAllv; bytes_in/out = input/output elements x dtype size.
// - Wait records (record_param_comms with collective "wait") carry no CommInfo; they get the
//   attributes "comm_wait" = 1 and "comm_seq" = the sequence number of the collective waited on.
// - rank: the caller's, else the rank recorded in record_param_comms, else 0 (a device
//   "cuda:N" is not a rank). world_size: the default group's size (chakra process_group:init
//   record, pg_size) or, in 1.0.x, the number of all-to-allv split sizes; else 1.
// - process_groups: from the "## process_group:init ##" record in chakra files plus any other
//   pg_name a record names; otherwise one group named "" (the world, as in 1.0.x files).
// Unknown op names are kept as they are.
#include <memory>
#include <optional>
#include <string>

#include "io/input_file.hpp"
#include "perfsim/trace.hpp"

namespace perfsim {

// Throws InputError naming the file, the node id and the field for invalid JSON (with the
// byte offset), a missing "schema" or "nodes", an unsupported schema, a node without id or
// name, duplicate ids, a dangling parent, a parent cycle, malformed tensors, argument lists of
// different lengths, an unknown collective, split sizes that disagree with the group size, or a
// GPU tensor consumed before the communication op that first produces it (et_tensor_order.hpp;
// other tensors may be consumed before any producer: parameters and inputs made before tracing).
Trace load_execution_trace(const io::InputBytes& input, std::optional<int> rank = std::nullopt);

// Loads several traces with one JSON parser whose buffers are kept between loads: cheaper than
// load_execution_trace per file when one process reads many (all ranks of a job, benchmarks).
class ExecutionTraceReader {
 public:
  ExecutionTraceReader();
  ~ExecutionTraceReader();
  ExecutionTraceReader(ExecutionTraceReader&&) noexcept;
  ExecutionTraceReader& operator=(ExecutionTraceReader&&) noexcept;

  // As load_execution_trace.
  Trace load(const io::InputBytes& input, std::optional<int> rank = std::nullopt);

 private:
  struct Parser;
  std::unique_ptr<Parser> parser_;
};

// `spec`: "x.json", "x.json.gz" or "archive.tar.gz:member".
Trace load_execution_trace_file(const std::string& spec, std::optional<int> rank = std::nullopt);

}  // namespace perfsim
