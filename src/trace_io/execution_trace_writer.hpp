#pragma once
// Writes a trace as a PyTorch execution trace (schema 1.1.0-chakra.0.0.4), so that generated
// workloads can be fed to other tools (Chakra converters, ASTRA-sim front ends) and read back
// by load_execution_trace. What the format cannot hold is dropped: kernels (an execution trace
// records host ops only; the kernel models re-expand them from op names and shapes) and
// measured timings. Two perfsim extensions, ignored by other readers: the top-level "rank" and
// "world_size" fields, and a "stream" attribute on communication ops (generated traces give
// every communicator its own stream, as NCCL does).
#include <ostream>
#include <string>

#include "perfsim/trace.hpp"

namespace perfsim {

inline constexpr const char* kWrittenEtSchema = "1.1.0-chakra.0.0.4";

void write_execution_trace(const Trace& trace, std::ostream& out);
// Throws RuntimeFailure when the file cannot be written.
void write_execution_trace_file(const Trace& trace, const std::string& path);

}  // namespace perfsim
