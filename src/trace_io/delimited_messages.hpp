#pragma once
// The framing of Chakra .et files: a stream of protobuf messages, each preceded by its length
// in bytes as a varint32 (the framing of chakra's third_party/utils/protolib encodeMessage /
// decodeMessage and protobuf's own delimited streams). Framing needs no protobuf library, so
// detection and the framing tests build everywhere.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfsim::trace_io {

// One framed message: where its length prefix starts in the stream, and its bytes.
struct DelimitedMessage {
  std::size_t prefix_offset = 0;
  std::string_view bytes;
};

// Appends `length` as a varint32 (7 bits a byte, low bits first, high bit = more follows).
void append_varint32(std::string& out, std::uint32_t length);
// Appends the length prefix and the message.
void append_delimited(std::string& out, std::string_view message);

// Splits a whole stream into its messages. Throws InputError naming `file`, the message index
// and the byte offset for a length prefix cut short or longer than 5 bytes, and a message
// running past the end of the stream. A zero length is an empty message.
std::vector<DelimitedMessage> split_delimited(std::string_view stream, const std::string& file);

// True when `stream` frames exactly: at least one message, the last ending at the last byte.
bool frames_exactly(std::string_view stream);

}  // namespace perfsim::trace_io
