#include "trace_io/trace_format.hpp"

#include <simdjson.h>

#include "perfsim/error.hpp"
#include "trace_io/execution_trace_loader.hpp"
#include "trace_io/kineto_loader.hpp"

namespace perfsim::trace_io {

std::string_view trace_format_name(TraceFormat format) {
  switch (format) {
    case TraceFormat::kKineto:
      return "kineto";
    case TraceFormat::kExecutionTrace:
      return "pytorch-et";
  }
  return "unknown";
}

TraceFormat detect_trace_format(const io::InputBytes& input) {
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
  }
  throw InputError(input.source, "", "unknown trace format");
}

Trace load_trace(const std::string& spec) {
  return load_trace(io::read_input(spec));
}

}  // namespace perfsim::trace_io
