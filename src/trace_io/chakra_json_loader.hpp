#pragma once
// Chakra JSON workload graphs ({"workload_graph": [{Id, Name, NodeType, data_deps, is_cpu_op,
// runtime, ctrlDeps?}, ...]}, as in mlcommons/chakra tests/data/json_trace.tar.gz).
//
// The graph has no op tree and no tensors, so the Trace it gives is flat: one Op per node in id
// order (parent from the first ctrlDeps entry when present), with attributes node_type,
// is_cpu_op, runtime and data_deps ("216,217"). A GPU node (is_cpu_op false) also carries one
// Kernel with its measured duration; a CPU node's runtime is its measured duration. The file
// does not state the unit of runtime; it is read as microseconds. Communication nodes
// (NodeType 7) are counted by the node_type attribute; CommInfo sits on the NCCL kernel node
// only (one per collective), with the kind taken from its name and sizes unknown (0 bytes):
// the format does not record them.
#include <optional>
#include <string>

#include "io/input_file.hpp"
#include "perfsim/trace.hpp"

namespace perfsim {

inline constexpr std::int64_t kChakraComputeNode = 4;
inline constexpr std::int64_t kChakraCommunicationNode = 7;

// Throws InputError naming the file, node and field for invalid JSON, a missing
// workload_graph, a node without Id, Name or NodeType, duplicate ids, or a data dependency on
// a node that does not exist.
Trace load_chakra_json(const io::InputBytes& input, std::optional<int> rank = std::nullopt);
Trace load_chakra_json_file(const std::string& spec, std::optional<int> rank = std::nullopt);

}  // namespace perfsim
