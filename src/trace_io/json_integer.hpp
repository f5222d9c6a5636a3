#pragma once
// A JSON value as a signed 64-bit integer, for the execution-trace readers (one copy: the
// library builds as unity batches, where two anonymous-namespace copies collide).
#include <cstdint>
#include <optional>

#include <simdjson.h>

namespace perfsim::trace_io {

// The element's value if it is an int64, else nullopt.
inline std::optional<std::int64_t> json_integer_of(simdjson::dom::element element) {
  std::int64_t value = 0;
  if (element.is_int64() && !element.get_int64().get(value))
    return value;
  return std::nullopt;
}

}  // namespace perfsim::trace_io
