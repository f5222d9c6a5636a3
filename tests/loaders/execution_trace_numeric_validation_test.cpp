// Issue 20: numbers in execution traces and Chakra JSON graphs that loaded to a silent wrong
// answer (message sizes whose bytes overflow int64, ranks truncated to int, an empty trace
// predicting 0 us) are InputErrors naming the file, the node and the field.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "perfsim/error.hpp"
#include "trace_io/chakra_json_loader.hpp"
#include "trace_io/execution_trace_loader.hpp"

namespace perfsim {
namespace {

const std::string kBroadcast =
    std::string(PERFSIM_TEST_DATA_DIR) + "/et_small/resnet_broadcast_rank1.json";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string replaced(std::string json, const std::string& from, const std::string& to) {
  const auto at = json.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    json.replace(at, from.size(), to);
  return json;
}

template <class Load>
void expect_rejected(Load load, const std::string& json,
                     const std::vector<std::string>& fragments) {
  try {
    load(io::InputBytes{"mutant.json", json});
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "mutant.json");
    for (const std::string& fragment : fragments)
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

void expect_et_rejected(const std::string& json, const std::vector<std::string>& fragments) {
  expect_rejected([](const io::InputBytes& input) { load_execution_trace(input); }, json,
                  fragments);
}

void expect_chakra_rejected(const std::string& json, const std::vector<std::string>& fragments) {
  expect_rejected([](const io::InputBytes& input) { load_chakra_json(input); }, json, fragments);
}

TEST(EtNumbers, TheUnmutatedFixtureLoadsItsBroadcast) {
  Trace trace = load_execution_trace(io::InputBytes{"broadcast.json", read_text(kBroadcast)});
  int collectives = 0;
  for (const Op& op : trace.ops) {
    if (op.comm) {
      ++collectives;
      EXPECT_EQ(op.comm->bytes_in, 53120 * 4);
    }
  }
  EXPECT_EQ(collectives, 1);
}

TEST(EtNumbers, MessageOfTwoToTheSixtyTwoElementsIsAnError) {
  // 2^62 floats: the byte count overflowed int64 and the broadcast cost what a small one does.
  expect_et_rejected(
      replaced(read_text(kBroadcast), "\"in_msg_nelems\", \"type\": \"uint64\", \"value\": 53120",
               "\"in_msg_nelems\", \"type\": \"uint64\", \"value\": 4611686018427387904"),
      {"node 437", "attrs.in_msg_nelems", "is outside"});
}

TEST(EtNumbers, MessageSizePastInt64IsAnErrorNotAFallbackToTheTensor) {
  expect_et_rejected(
      replaced(read_text(kBroadcast), "\"in_msg_nelems\", \"type\": \"uint64\", \"value\": 53120",
               "\"in_msg_nelems\", \"type\": \"uint64\", \"value\": 18446744073709551615"),
      {"node 437", "attrs.in_msg_nelems", "is not an integer"});
}

TEST(EtNumbers, TensorWhoseBytesOverflowIsAnError) {
  expect_et_rejected(replaced(read_text(kBroadcast), "53120, 4, \"cuda:1\"]], 33",
                              "4611686018427387904, 4, \"cuda:1\"]], 33"),
                     {"exceeds"});
}

TEST(EtNumbers, GroupSizeOutOfRangeIsAnError) {
  expect_et_rejected(
      replaced(read_text(kBroadcast), "\"pg_size\", \"type\": \"uint64\", \"value\": 2",
               "\"pg_size\", \"type\": \"uint64\", \"value\": 4294967298"),
      {"attrs.pg_size", "is outside"});
}

TEST(EtNumbers, EmptyTraceIsAnError) {
  expect_et_rejected(R"({"schema": "1.0.1", "pid": 1, "nodes": []})", {"nothing to simulate"});
}

TEST(EtNumbers, WorldSizeBeyondIntIsAnError) {
  std::string json = read_text(kBroadcast);
  json.insert(1, "\"world_size\": 4294967298,");
  expect_et_rejected(json, {"world_size"});
}

TEST(ChakraNumbers, HugeRuntimeIsAnError) {
  expect_chakra_rejected(R"({"workload_graph": [
    {"Id": 1, "Name": "k", "NodeType": 4, "is_cpu_op": false, "runtime": 1e308}]})",
                         {"node 1", "runtime", "above the supported"});
}

TEST(ChakraNumbers, EmptyGraphIsAnError) {
  expect_chakra_rejected(R"({"workload_graph": []})", {"workload_graph", "nothing to simulate"});
}

TEST(ChakraNumbers, GpuCountBeyondIntIsAnError) {
  expect_chakra_rejected(R"({"ngpus": 4294967298, "workload_graph": [
    {"Id": 1, "Name": "k", "NodeType": 4, "is_cpu_op": false, "runtime": 3}]})",
                         {"ngpus", "outside"});
}

}  // namespace
}  // namespace perfsim
