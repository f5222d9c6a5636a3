// Loads the Chakra JSON workload graph fixture (chakra-json/json_trace.tar.gz) and checks the
// counts in ../shared/data/traces/README.md; malformed graphs are rejected with precise errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "perfsim/error.hpp"
#include "trace_io/chakra_json_loader.hpp"

namespace perfsim {
namespace {

const std::string kArchive =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/chakra-json/json_trace.tar.gz";

std::int64_t int_attribute(const Op& op, std::string_view name) {
  const Attribute* attribute = op.find_attribute(name);
  return attribute == nullptr ? -1 : std::get<std::int64_t>(attribute->value);
}

TEST(ChakraJsonLoader, WorkloadGraphHas3664NodesAnd21CommunicationNodes) {
  ASSERT_TRUE(std::filesystem::exists(kArchive)) << "fixture missing: " << kArchive;
  Trace trace = load_chakra_json_file(kArchive + ":jsonData/chakra.0.json");
  EXPECT_EQ(trace.format, "chakra-json");
  EXPECT_EQ(trace.ops.size(), 3664u);
  std::size_t communication = 0, compute = 0, cpu = 0, with_runtime = 0;
  std::size_t all_reduce = 0, broadcast = 0;
  double gpu_runtime = 0;
  for (const Op& op : trace.ops) {
    std::int64_t type = int_attribute(op, "node_type");
    communication += type == kChakraCommunicationNode;
    compute += type == kChakraComputeNode;
    bool is_cpu = int_attribute(op, "is_cpu_op") == 1;
    cpu += is_cpu;
    if (const Attribute* runtime = op.find_attribute("runtime")) {
      ++with_runtime;
      if (!is_cpu)
        gpu_runtime += std::get<double>(runtime->value);
    }
    if (op.comm) {
      EXPECT_FALSE(is_cpu) << "CommInfo sits on the NCCL kernel node";
      all_reduce += op.comm->kind == CollectiveKind::kAllReduce;
      broadcast += op.comm->kind == CollectiveKind::kBroadcast;
    }
    if (!is_cpu) {
      ASSERT_EQ(op.kernels.size(), 1u);
      EXPECT_EQ(op.kernels[0].name, op.name);
    }
  }
  EXPECT_EQ(communication, 21u);
  EXPECT_EQ(compute, 3643u);
  EXPECT_EQ(cpu, 2448u);
  EXPECT_EQ(trace.ops.size() - cpu, 1216u);
  EXPECT_EQ(with_runtime, 3507u);
  EXPECT_DOUBLE_EQ(gpu_runtime, 329543.0);
  EXPECT_EQ(all_reduce, 5u) << "ncclKernel_AllReduce_RING_LL_Sum_float x5";
  EXPECT_EQ(broadcast, 2u) << "ncclKernel_Broadcast_RING_LL_Sum_int8_t x2";
  const Op* first = trace.find(217);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->name, "aten::flatten_dense_tensors(1)");
}

// The small excerpt keeps ctrlDeps pointing at nodes that were cut out.
TEST(ChakraJsonLoader, SmallExcerptWithCutControlDependenciesIsRejected) {
  try {
    load_chakra_json_file(kArchive + ":jsonData/small_chakra.0.json");
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("node 216, field ctrlDeps: dangling parent id 3"),
              std::string::npos)
        << error.what();
  }
}

struct MalformedCase {
  const char* file;
  const char* expected;
};

class MalformedChakraJson : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedChakraJson, IsRejectedWithAPreciseMessage) {
  std::string path = std::string(PERFSIM_TEST_DATA_DIR) + "/malformed/" + GetParam().file;
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  try {
    load_chakra_json_file(path);
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(GetParam().expected), std::string::npos)
        << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Corpus, MalformedChakraJson,
    ::testing::Values(
        MalformedCase{"chakra_missing_graph.json", "top level: missing field \"workload_graph\""},
        MalformedCase{"chakra_node_missing_type.json", "node 2, field NodeType: missing field"},
        MalformedCase{"chakra_dangling_data_dep.json",
                      "node 2, field data_deps: dependency on node 42, which does not exist"},
        MalformedCase{"chakra_negative_runtime.json",
                      "node 1, field runtime: runtime is not a non-negative number"},
        MalformedCase{"chakra_duplicate_id.json", "node 1, field id: duplicate node id"}),
    [](const ::testing::TestParamInfo<MalformedCase>& info) {
      std::string name = info.param.file;
      return name.substr(0, name.find('.'));
    });

}  // namespace
}  // namespace perfsim
