#include "trace_io/trace_format.hpp"

#include <simdjson.h>

#include "perfsim/error.hpp"
#include "trace_io/chakra_et.hpp"
#include "trace_io/delimited_messages.hpp"
#include "trace_io/execution_trace_loader.hpp"
#include "trace_io/kineto_loader.hpp"

namespace perfsim::trace_io {

std::string_view trace_format_name(TraceFormat format) {
  switch (format) {
    case TraceFormat::kKineto:
      return "kineto";
    case TraceFormat::kExecutionTrace:
      return "pytorch-et";
    case TraceFormat::kChakraProtobuf:
      return "chakra-et";
  }
  return "unknown";
}

bool is_chakra_protobuf(std::string_view bytes) {
  const std::size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    return false;  // blank: the JSON error says more
  if (bytes[first] != '{' && bytes[first] != '[')
    return true;
  // A GlobalMetadata of 123 bytes starts with '{' too; JSON framing exactly is beyond chance.
  return frames_exactly(bytes);
}

TraceFormat detect_trace_format(const io::InputBytes& input) {
  if (is_chakra_protobuf(input.bytes))
    return TraceFormat::kChakraProtobuf;
  // On-demand parsing stops at the keys: the detection does not parse the whole trace.
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(input.bytes);
  simdjson::ondemand::document document;
  simdjson::ondemand::object root;
  if (parser.iterate(padded).get(document) != simdjson::SUCCESS ||
      document.get_object().get(root) != simdjson::SUCCESS) {
    throw InputError(input.source, "",
                     "not a JSON object: neither a Kineto nor an execution trace");
  }
  for (auto field : root) {  // values not looked at are skipped when iteration moves on
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS)
      break;
    if (key == "traceEvents")
      return TraceFormat::kKineto;
    if (key == "nodes")
      return TraceFormat::kExecutionTrace;
  }
  throw InputError(input.source, "",
                   "has neither \"traceEvents\" (Kineto) nor \"nodes\" (execution trace) at the "
                   "top level");
}

Trace load_trace(const io::InputBytes& input) {
  switch (detect_trace_format(input)) {
    case TraceFormat::kKineto:
      return load_kineto_trace(input);
    case TraceFormat::kExecutionTrace:
      return load_execution_trace(input);
    case TraceFormat::kChakraProtobuf:
      return load_chakra_et(input);
  }
  throw InputError(input.source, "", "unknown trace format");
}

Trace load_execution_trace_any(const io::InputBytes& input) {
  return is_chakra_protobuf(input.bytes) ? load_chakra_et(input) : load_execution_trace(input);
}

Trace load_trace(const std::string& spec) {
  return load_trace(io::read_input(spec));
}

}  // namespace perfsim::trace_io
