#include "trace_io/kineto_memory_events.hpp"

#include <simdjson.h>

#include <string>

#include "io/checked_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::trace_io {
namespace {

using simdjson::dom::element;

// Kineto writes these as integers, some profilers as doubles.
bool read_number(element object, const char* key, double& value) {
  element field;
  if (object.at_key(key).get(field) != simdjson::SUCCESS)
    return false;
  std::int64_t integer = 0;
  if (field.get_int64().get(integer) == simdjson::SUCCESS) {
    value = static_cast<double>(integer);
    return true;
  }
  std::uint64_t unsigned_integer = 0;
  if (field.get_uint64().get(unsigned_integer) == simdjson::SUCCESS) {
    value = static_cast<double>(unsigned_integer);
    return true;
  }
  return field.get_double().get(value) == simdjson::SUCCESS;
}

}  // namespace

std::vector<KinetoMemoryEvent> read_kineto_memory_events(const io::InputBytes& input) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(input.bytes);
  element root;
  if (auto error = parser.parse(padded).get(root); error != simdjson::SUCCESS) {
    throw InputError(
        input.source, "",
        std::string("invalid JSON (truncated or malformed): ") + simdjson::error_message(error));
  }
  simdjson::dom::array events;
  if (root.at_key("traceEvents").get_array().get(events) != simdjson::SUCCESS)
    throw InputError(input.source, "traceEvents", "is missing or not an array");
  std::vector<KinetoMemoryEvent> found;
  std::size_t index = 0;
  for (element json : events) {
    std::string_view name;
    if (json.at_key("name").get_string().get(name) != simdjson::SUCCESS || name != "[memory]") {
      ++index;
      continue;
    }
    const std::string where = "traceEvents[" + std::to_string(index) + "] (\"[memory]\")";
    element args;
    if (json.at_key("args").get(args) != simdjson::SUCCESS)
      throw InputError(input.source, where, "has no \"args\" object");
    KinetoMemoryEvent event;
    event.index = index;
    double value = 0;
    if (!read_number(json, "ts", value))
      throw InputError(input.source, where, "field \"ts\" is missing or not a number");
    event.ts_us = io::checked_real(value, -io::kMaxAbsTimestampUs, io::kMaxAbsTimestampUs,
                                   input.source, where + " field \"ts\"");
    // Converting a double outside int's range is undefined behaviour: check first.
    if (read_number(args, "Device Type", value))
      event.device_type = static_cast<int>(io::checked_whole(
          value, -1, 1 << 20, input.source, where + " field \"args.Device Type\""));
    if (read_number(args, "Device Id", value))
      event.device_id = static_cast<int>(
          io::checked_whole(value, -1, 1 << 20, input.source, where + " field \"args.Device Id\""));
    const char* required[] = {"Bytes", "Total Allocated", "Total Reserved"};
    Bytes* targets[] = {&event.bytes, &event.total_allocated_bytes, &event.total_reserved_bytes};
    for (int i = 0; i < 3; ++i) {
      if (!read_number(args, required[i], value)) {
        throw InputError(
            input.source, where,
            std::string("field \"args.") + required[i] + "\" is missing or not a number");
      }
      *targets[i] = io::checked_whole(value, -io::kMaxBytes, io::kMaxBytes, input.source,
                                      where + " field \"args." + required[i] + "\"");
    }
    found.push_back(event);
    ++index;
  }
  return found;
}

}  // namespace perfsim::trace_io
