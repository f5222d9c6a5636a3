#pragma once
// A JSON number that fits int64, else nullopt: the execution-trace readers' one integer rule,
// shared (a unity build puts their sources in one translation unit).
#include <cstdint>
#include <optional>

#include <simdjson.h>

namespace perfsim::trace_io {

inline std::optional<std::int64_t> integer_of(simdjson::dom::element element) {
  std::int64_t value = 0;
  if (element.is_int64() && !element.get_int64().get(value))
    return value;
  return std::nullopt;
}

}  // namespace perfsim::trace_io
