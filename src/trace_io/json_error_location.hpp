#pragma once
// Where a JSON document stops being valid. The DOM parser reports what went wrong but not where;
// on error we walk the document once more with the on-demand parser, which knows its position.
#include <cstddef>

#include <simdjson.h>

namespace perfsim::trace_io {

// Byte offset of the first error in `json`, or json.size() when the document ends early
// (truncated input). Only called after a failed parse, so speed does not matter here.
std::size_t locate_json_error(const simdjson::padded_string& json);

}  // namespace perfsim::trace_io
