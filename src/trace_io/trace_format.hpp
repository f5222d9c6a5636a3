#pragma once
// Which trace format a file holds, decided by its content, and one entry point that loads
// any of them.
#include <string>
#include <string_view>

#include "io/input_file.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::trace_io {

enum class TraceFormat { kKineto, kExecutionTrace, kChakraProtobuf };

std::string_view trace_format_name(TraceFormat format);

// A Kineto trace is a JSON object with a top-level "traceEvents" key; a PyTorch execution
// trace has "nodes". Only the top-level keys are read. Content that does not start as JSON
// does ('{' or '[' after blanks), or that frames exactly as length-prefixed messages, is a
// Chakra protobuf trace (.et; its loader reports what is wrong with it). Throws InputError
// naming the source when JSON content is not an object or has neither key.
TraceFormat detect_trace_format(const io::InputBytes& input);
bool is_chakra_protobuf(std::string_view bytes);

// An execution trace in either form, by content: PyTorch ET JSON or Chakra protobuf.
Trace load_execution_trace_any(const io::InputBytes& input);

// `spec`: a .json / .json.gz file or "archive.tar.gz:member", either format.
Trace load_trace(const std::string& spec);
Trace load_trace(const io::InputBytes& input);

}  // namespace perfsim::trace_io
