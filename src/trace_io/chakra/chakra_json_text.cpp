#include "trace_io/chakra/chakra_json_text.hpp"

#include <charconv>
#include <cmath>
#include <limits>

#include <simdjson.h>

namespace perfsim::trace_io {
namespace {

namespace pb = ChakraProtoMsg;

template <class Number>
void append_number(std::string& out, Number value) {
  char buffer[32];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, error == std::errc() ? end : buffer);
}

}  // namespace

JsonText& JsonText::string(std::string_view text) {
  // Bytes fields may hold anything; JSON text must be UTF-8.
  const bool valid = simdjson::validate_utf8(text.data(), text.size());
  out_.push_back('"');
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out_.push_back('\\');
      out_.push_back(c);
    } else if (byte < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out_ += "\\u00";
      out_.push_back(kHex[byte >> 4]);
      out_.push_back(kHex[byte & 0xf]);
    } else if (byte >= 0x80 && !valid) {
      out_.push_back('?');
    } else {
      out_.push_back(c);
    }
  }
  out_.push_back('"');
  return *this;
}

JsonText& JsonText::integer(std::int64_t value) {
  append_number(out_, value);
  return *this;
}

JsonText& JsonText::unsigned_integer(std::uint64_t value) {
  append_number(out_, value);
  return *this;
}

JsonText& JsonText::real(double value) {
  if (!std::isfinite(value))
    return raw("null");
  const std::size_t start = out_.size();
  append_number(out_, value);  // shortest text that reads back as the same double
  if (out_.find_first_of(".eE", start) == std::string::npos)
    out_ += ".0";  // stays a real for the JSON reader
  return *this;
}

template <class Values, class Write>
JsonText& JsonText::list(const Values& values, Write write) {
  out_.push_back('[');
  bool first = true;
  for (const auto& value : values) {
    if (!first)
      out_.push_back(',');
    first = false;
    write(*this, value);
  }
  out_.push_back(']');
  return *this;
}

JsonText& JsonText::attribute_value(const pb::AttributeProto& attr) {
  using Value = pb::AttributeProto::ValueCase;
  auto signed_value = [](JsonText& out, std::int64_t value) { out.integer(value); };
  auto unsigned_value = [](JsonText& out, std::uint64_t value) { out.unsigned_integer(value); };
  auto real_value = [](JsonText& out, double value) { out.real(value); };
  auto bool_value = [](JsonText& out, bool value) { out.boolean(value); };
  auto text_value = [](JsonText& out, const std::string& value) { out.string(value); };
  switch (attr.value_case()) {
    case Value::kDoubleVal:
      return real(attr.double_val());
    case Value::kFloatVal:
      return real(attr.float_val());
    case Value::kInt32Val:
      return integer(attr.int32_val());
    case Value::kInt64Val:
      return integer(attr.int64_val());
    case Value::kUint32Val:
      return unsigned_integer(attr.uint32_val());
    case Value::kUint64Val:
      return unsigned_integer(attr.uint64_val());
    case Value::kSint32Val:
      return integer(attr.sint32_val());
    case Value::kSint64Val:
      return integer(attr.sint64_val());
    case Value::kFixed32Val:
      return unsigned_integer(attr.fixed32_val());
    case Value::kFixed64Val:
      return unsigned_integer(attr.fixed64_val());
    case Value::kSfixed32Val:
      return integer(attr.sfixed32_val());
    case Value::kSfixed64Val:
      return integer(attr.sfixed64_val());
    case Value::kBoolVal:
      return boolean(attr.bool_val());
    case Value::kStringVal:
      return string(attr.string_val());
    case Value::kBytesVal:
      return string(attr.bytes_val());
    case Value::kDoubleList:
      return list(attr.double_list().values(), real_value);
    case Value::kFloatList:
      return list(attr.float_list().values(), real_value);
    case Value::kInt32List:
      return list(attr.int32_list().values(), signed_value);
    case Value::kInt64List:
      return list(attr.int64_list().values(), signed_value);
    case Value::kUint32List:
      return list(attr.uint32_list().values(), unsigned_value);
    case Value::kUint64List:
      return list(attr.uint64_list().values(), unsigned_value);
    case Value::kSint32List:
      return list(attr.sint32_list().values(), signed_value);
    case Value::kSint64List:
      return list(attr.sint64_list().values(), signed_value);
    case Value::kFixed32List:
      return list(attr.fixed32_list().values(), unsigned_value);
    case Value::kFixed64List:
      return list(attr.fixed64_list().values(), unsigned_value);
    case Value::kSfixed32List:
      return list(attr.sfixed32_list().values(), signed_value);
    case Value::kSfixed64List:
      return list(attr.sfixed64_list().values(), signed_value);
    case Value::kBoolList:
      return list(attr.bool_list().values(), bool_value);
    case Value::kStringList:
      return list(attr.string_list().values(), text_value);
    case Value::kBytesList:
      return list(attr.bytes_list().values(), text_value);
    case Value::VALUE_NOT_SET:
      break;
  }
  return raw("null");
}

AttributeInteger attribute_integer(const pb::AttributeProto* attr) {
  using Value = pb::AttributeProto::ValueCase;
  if (attr == nullptr)
    return {0, IntegerProblem::kMissing};
  auto from_unsigned = [](std::uint64_t value) {
    return value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
               ? AttributeInteger{0, IntegerProblem::kOutOfRange}
               : AttributeInteger{static_cast<std::int64_t>(value), IntegerProblem::kNone};
  };
  switch (attr->value_case()) {
    case Value::kInt32Val:
      return {attr->int32_val(), IntegerProblem::kNone};
    case Value::kInt64Val:
      return {attr->int64_val(), IntegerProblem::kNone};
    case Value::kSint32Val:
      return {attr->sint32_val(), IntegerProblem::kNone};
    case Value::kSint64Val:
      return {attr->sint64_val(), IntegerProblem::kNone};
    case Value::kSfixed32Val:
      return {attr->sfixed32_val(), IntegerProblem::kNone};
    case Value::kSfixed64Val:
      return {attr->sfixed64_val(), IntegerProblem::kNone};
    case Value::kUint32Val:
      return from_unsigned(attr->uint32_val());
    case Value::kUint64Val:
      return from_unsigned(attr->uint64_val());
    case Value::kFixed32Val:
      return from_unsigned(attr->fixed32_val());
    case Value::kFixed64Val:
      return from_unsigned(attr->fixed64_val());
    default:
      return {0, IntegerProblem::kNotAnInteger};
  }
}

}  // namespace perfsim::trace_io
