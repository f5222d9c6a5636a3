// IOInfo lists as Chakra's converter writes them (Python's str() of JSON lists) turned into
// JSON (trace_io/python_literal_json.hpp).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trace_io/python_literal_json.hpp"

namespace perfsim::trace_io {
namespace {

nlohmann::json parsed(std::string_view literal) {
  std::optional<std::string> text = python_literal_to_json(literal);
  EXPECT_TRUE(text.has_value()) << literal;
  return nlohmann::json::parse(text.value_or("null"));
}

TEST(PythonLiteralJson, ConverterListsBecomeTheJsonTheyCameFrom) {
  const nlohmann::json values =
      parsed("[[[14, 15, 0, 65536, 2, 'cuda:0']], 1, ('0', 'default_pg'), None, False, 1e-05]");
  EXPECT_EQ(values, nlohmann::json::parse(
                        R"([[[14, 15, 0, 65536, 2, "cuda:0"]], 1, ["0", "default_pg"], null,
                            false, 1e-05])"));
}

TEST(PythonLiteralJson, QuotesInsideStringsSurvive) {
  // str() of a list holding a JSON string: single quotes outside, double quotes inside.
  const nlohmann::json values = parsed(R"(['[{"pg_name": "0", "ranks": [0, 1]}]', "it's"])");
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0], R"([{"pg_name": "0", "ranks": [0, 1]}])");
  EXPECT_EQ(values[1], "it's");
  EXPECT_EQ(parsed(R"(['a\'b', 'c\\d', '\x41'])"),
            nlohmann::json::parse(R"(["a'b", "c\\d", "A"])"));
}

TEST(PythonLiteralJson, OneElementTuplesAndJsonTextPassThrough) {
  EXPECT_EQ(parsed("[(1,), (2, 3)]"), nlohmann::json::parse("[[1], [2, 3]]"));
  const std::string json = R"([[1, 2, 0, 4, 2, "cuda:0"], true, null, "a\"b"])";
  EXPECT_EQ(parsed(json), nlohmann::json::parse(json));
}

TEST(PythonLiteralJson, UnclosedStringsAreRefused) {
  EXPECT_FALSE(python_literal_to_json("['cuda:0").has_value());
  EXPECT_FALSE(python_literal_to_json("['ends with a backslash\\").has_value());
}

}  // namespace
}  // namespace perfsim::trace_io
