#pragma once
// The PyTorch execution-trace document perfsim's writer builds for a trace (see
// execution_trace_writer.hpp for what it holds), before it becomes text: the Chakra protobuf
// writer turns the same nodes into Chakra nodes, so both forms describe one program.
#include <cstdint>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "perfsim/trace.hpp"

namespace perfsim::trace_io {

// The node id of the process root, which Chakra's converter drops (it has no dependencies).
inline constexpr std::int64_t kEtProcessRootId = 1;

struct EtDocument {
  nlohmann::json json;  // {"schema", "pid", "time", "rank", "world_size", "nodes"}
  std::unordered_map<std::int64_t, std::int64_t> node_of_op;  // Op::id -> node id
};

EtDocument build_et_document(const Trace& trace);

}  // namespace perfsim::trace_io
