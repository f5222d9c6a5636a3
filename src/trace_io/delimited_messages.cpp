#include "trace_io/delimited_messages.hpp"

#include <optional>

#include "perfsim/error.hpp"

namespace perfsim::trace_io {
namespace {

constexpr std::size_t kMaxVarint32Bytes = 5;

enum class PrefixProblem { kNone, kCutShort, kTooLong };

struct Prefix {
  std::uint64_t length = 0;
  std::size_t size = 0;  // bytes of the prefix itself
  PrefixProblem problem = PrefixProblem::kNone;
};

Prefix read_prefix(std::string_view stream, std::size_t offset) {
  Prefix prefix;
  for (int shift = 0; prefix.size < kMaxVarint32Bytes; shift += 7) {
    if (offset + prefix.size >= stream.size()) {
      prefix.problem = PrefixProblem::kCutShort;
      return prefix;
    }
    const auto byte = static_cast<std::uint8_t>(stream[offset + prefix.size]);
    ++prefix.size;
    prefix.length |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0)
      return prefix;
  }
  prefix.problem = PrefixProblem::kTooLong;
  return prefix;
}

// The messages, or the first problem as (index, offset, text).
struct Split {
  std::vector<DelimitedMessage> messages;
  std::optional<std::string> problem;
  std::size_t problem_offset = 0;
};

Split split(std::string_view stream) {
  Split result;
  std::size_t offset = 0;
  while (offset < stream.size()) {
    const Prefix prefix = read_prefix(stream, offset);
    const std::string index = "message " + std::to_string(result.messages.size());
    result.problem_offset = offset;
    if (prefix.problem == PrefixProblem::kCutShort) {
      result.problem = index + ": the length prefix is cut short (truncated file)";
      return result;
    }
    if (prefix.problem == PrefixProblem::kTooLong) {
      result.problem = index + ": the length prefix runs past 5 bytes (not a varint32)";
      return result;
    }
    const std::size_t start = offset + prefix.size;
    if (prefix.length > stream.size() - start) {
      result.problem = index + ": " + std::to_string(prefix.length) + " bytes announced, " +
                       std::to_string(stream.size() - start) + " left in the file (truncated file)";
      return result;
    }
    result.messages.push_back({offset, stream.substr(start, prefix.length)});
    offset = start + prefix.length;
  }
  return result;
}

}  // namespace

void append_varint32(std::string& out, std::uint32_t length) {
  while (length >= 0x80) {
    out.push_back(static_cast<char>((length & 0x7f) | 0x80));
    length >>= 7;
  }
  out.push_back(static_cast<char>(length));
}

void append_delimited(std::string& out, std::string_view message) {
  append_varint32(out, static_cast<std::uint32_t>(message.size()));
  out.append(message);
}

std::vector<DelimitedMessage> split_delimited(std::string_view stream, const std::string& file) {
  Split result = split(stream);
  if (result.problem) {
    throw InputError(file, "byte " + std::to_string(result.problem_offset),
                     "Chakra protobuf framing: " + *result.problem);
  }
  return std::move(result.messages);
}

bool frames_exactly(std::string_view stream) {
  const Split result = split(stream);
  return !result.problem && !result.messages.empty();
}

}  // namespace perfsim::trace_io
