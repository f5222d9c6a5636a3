#include "trace_io/json_error_location.hpp"

namespace perfsim::trace_io {
namespace {

namespace od = simdjson::ondemand;

// Deep enough for any trace; a crafted deeper document is reported at the depth limit.
constexpr int kMaxWalkDepth = 256;

simdjson::error_code walk(od::value value, int depth) {
  if (depth > kMaxWalkDepth)
    return simdjson::DEPTH_ERROR;
  od::json_type type;
  if (auto error = value.type().get(type))
    return error;
  switch (type) {
    case od::json_type::array: {
      od::array array;
      if (auto error = value.get_array().get(array))
        return error;
      for (auto child : array) {
        od::value element;
        if (auto error = child.get(element))
          return error;
        if (auto error = walk(element, depth + 1))
          return error;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::object: {
      od::object object;
      if (auto error = value.get_object().get(object))
        return error;
      for (auto field : object) {
        std::string_view key;
        if (auto error = field.unescaped_key().get(key))
          return error;
        od::value element;
        if (auto error = field.value().get(element))
          return error;
        if (auto error = walk(element, depth + 1))
          return error;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::number:
      return value.get_number().error();
    case od::json_type::string:
      return value.get_string().error();
    case od::json_type::boolean:
      return value.get_bool().error();
    case od::json_type::null:
      return value.is_null().error();
  }
  return simdjson::SUCCESS;
}

}  // namespace

std::size_t locate_json_error(const simdjson::padded_string& json) {
  od::parser parser;
  od::document document;
  if (parser.iterate(json).get(document))
    return json.size();
  od::value root;
  simdjson::error_code error = document.get_value().get(root);
  if (!error)
    error = walk(root, 0);
  if (!error)
    return json.size();
  const char* position = nullptr;
  if (document.current_location().get(position) || position == nullptr)
    return json.size();
  std::ptrdiff_t offset = position - json.data();
  if (offset < 0 || static_cast<std::size_t>(offset) > json.size())
    return json.size();
  return static_cast<std::size_t>(offset);
}

}  // namespace perfsim::trace_io
