#pragma once
// MLCommons Chakra execution traces in protobuf (.et files; schema trace_io/chakra/et_def.proto,
// framing trace_io/delimited_messages.hpp), read and written beside the JSON forms.
//
// Writing: one file per rank. The host ops are the nodes perfsim's PyTorch-ET writer writes
// (execution_trace_writer.hpp), as Chakra's PyTorch converter turns such nodes into Chakra
// nodes: COMP_NODE with is_cpu_op = true (METADATA_NODE for "## process_group:init ##"),
// ctrl_deps = the caller, data_deps = the previous host node in call order, argument lists
// in IOInfo as JSON text, attributes rf_id, fw_parent, seq_id, scope, tid, fw_tid, op_schema
// as int64/string. Every kernel an op launched follows as a device node (is_cpu_op = false,
// ctrl_deps and data_deps = the launching op, "stream"): COMP_NODE with num_ops (the op's
// flops shared among its kernels) and tensor_size (bytes of the op's tensors, shared alike);
// COMM_COLL_NODE with comm_type, comm_size (bytes this rank contributes), pg_name and a
// data dependency on the previous collective of its group, as the converter chains them;
// COMM_SEND_NODE / COMM_RECV_NODE with comm_size, comm_src, comm_dst, comm_tag. These are
// the attributes and value types Chakra's feeder (et_feeder_node.cpp) reads. perfsim's own
// additions, ignored by other readers: GlobalMetadata attributes rank and world_size, and
// perfsim_kernel_category / perfsim_launch_api on device nodes.
//
// Reading: host nodes (is_cpu_op true or absent, not a communication or memory node) become
// ops exactly as the JSON loader reads the same nodes (execution_trace_loader.hpp: tensors,
// attributes, record_param_comms, process groups); IOInfo may hold JSON or Python's str() of
// the lists (what Chakra's converter writes). Device nodes become Kernels of the op their
// first ctrl_dep names (duration_micros > 0 is the kernel's measured duration); one without a
// host caller (Chakra's generator writes such traces) becomes an op of its own. A
// communication node whose op has no CommInfo yet gives it one from comm_type, comm_size
// (bytes in and out), pg_name, comm_src / comm_dst / comm_tag. Ops run in node id order;
// data_deps are not read (perfsim's engine orders work by streams and collectives). Parentless
// host ops do work unless they are profiler roots, "## ... ##" records or METADATA_NODEs.
// The rank: the caller's, else GlobalMetadata's rank, else the N of a "NAME.N.et" file name,
// else a record_param_comms rank, else 0.
#include <optional>
#include <ostream>
#include <string>

#include "io/input_file.hpp"
#include "perfsim/trace.hpp"

namespace perfsim {

inline constexpr const char* kChakraEtVersion = "0.0.4";

// False when perfsim was built without protobuf; every function below then throws
// RuntimeFailure saying so.
bool chakra_et_available();

// Throws InputError naming the file and the byte offset of the message for framing errors
// (truncated file, bad length prefix) and messages that are not GlobalMetadata / Node; naming
// the node and field for everything the JSON loader rejects, argument lists that are not
// lists, an unknown comm_type and send/recv nodes without a peer.
Trace load_chakra_et(const io::InputBytes& input, std::optional<int> rank = std::nullopt);

void write_chakra_et(const Trace& trace, std::ostream& out);
// Throws RuntimeFailure when the file cannot be written.
void write_chakra_et_file(const Trace& trace, const std::string& path);

// "PREFIX.RANK.et": the names Chakra tools (ASTRA-sim's --workload-configuration=PREFIX) read.
inline std::string chakra_et_file_name(const std::string& prefix, int rank) {
  return prefix + "." + std::to_string(rank) + ".et";
}

}  // namespace perfsim
