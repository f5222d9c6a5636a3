// Chakra .et framing (trace_io/delimited_messages.hpp): varint32 length prefixes as Chakra's
// protolib encodeMessage writes them, and truncated or malformed streams as InputErrors.
#include <gtest/gtest.h>

#include "perfsim/error.hpp"
#include "trace_io/delimited_messages.hpp"

namespace perfsim::trace_io {
namespace {

std::string varint(std::uint32_t value) {
  std::string out;
  append_varint32(out, value);
  return out;
}

TEST(DelimitedMessages, LengthPrefixesAreVarint32LowBitsFirst) {
  EXPECT_EQ(varint(0), std::string(1, '\0'));
  EXPECT_EQ(varint(127), "\x7f");
  EXPECT_EQ(varint(128), "\x80\x01");
  EXPECT_EQ(varint(300), "\xac\x02");  // protobuf's documented example
  EXPECT_EQ(varint(70000), "\xf0\xa2\x04");
}

TEST(DelimitedMessages, MessagesOfEveryPrefixWidthSplitBack) {
  std::string stream;
  const std::vector<std::size_t> lengths{0, 1, 127, 128, 300, 16383, 16384, 70000};
  for (std::size_t i = 0; i < lengths.size(); ++i)
    append_delimited(stream, std::string(lengths[i], static_cast<char>('a' + i)));
  const std::vector<DelimitedMessage> messages = split_delimited(stream, "s.et");
  ASSERT_EQ(messages.size(), lengths.size());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    EXPECT_EQ(messages[i].prefix_offset, offset);
    EXPECT_EQ(messages[i].bytes, std::string(lengths[i], static_cast<char>('a' + i)));
    offset += varint(static_cast<std::uint32_t>(lengths[i])).size() + lengths[i];
  }
  EXPECT_TRUE(frames_exactly(stream));
}

void expect_framing_error(const std::string& stream, const std::string& location,
                          const std::string& fragment) {
  try {
    split_delimited(stream, "bad.et");
    FAIL() << "accepted " << stream.size() << " bytes";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "bad.et");
    EXPECT_EQ(error.location(), location);
    EXPECT_NE(error.problem().find(fragment), std::string::npos) << error.what();
  }
  EXPECT_FALSE(frames_exactly(stream));
}

TEST(DelimitedMessages, TruncatedAndMalformedStreamsNameTheByte) {
  std::string two;
  append_delimited(two, "first");
  append_delimited(two, std::string(200, 'x'));  // a two-byte prefix at byte 6
  expect_framing_error(two.substr(0, 7), "byte 6", "message 1: the length prefix is cut short");
  expect_framing_error(two.substr(0, 100), "byte 6",
                       "message 1: 200 bytes announced, 92 left in the file");
  expect_framing_error("\x80\x80\x80\x80\x80\x01", "byte 0", "runs past 5 bytes");
}

TEST(DelimitedMessages, JsonTextDoesNotFrame) {
  EXPECT_FALSE(frames_exactly(R"({"schema": "1.1.0-chakra.0.0.4", "nodes": []})"));
  EXPECT_FALSE(frames_exactly(""));
}

}  // namespace
}  // namespace perfsim::trace_io
