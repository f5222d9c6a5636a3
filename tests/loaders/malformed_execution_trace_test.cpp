// Every file in tests/data/malformed/et_*.json must be rejected with an InputError whose text
// names the file, the location (node id and field, or byte offset) and the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "perfsim/error.hpp"
#include "trace_io/execution_trace_loader.hpp"

namespace perfsim {
namespace {

struct MalformedCase {
  const char* file;
  const char* expected;  // a substring of InputError::what()
};

void PrintTo(const MalformedCase& c, std::ostream* os) {
  *os << c.file;
}

const std::string kMalformedDir = std::string(PERFSIM_TEST_DATA_DIR) + "/malformed";

constexpr MalformedCase kCases[] = {
    {"et_truncated.json", "byte 326: invalid JSON: The JSON document has an improper structure"},
    {"et_empty.json", "byte 0 (end of input): invalid JSON: Empty: no JSON found"},
    {"et_invalid_token.json", "byte 78: invalid JSON"},
    {"et_top_level_array.json", "top level: expected a JSON object with \"schema\" and \"nodes\""},
    {"et_missing_nodes.json", "top level: missing field \"nodes\""},
    {"et_missing_schema.json", "top level: missing field \"schema\""},
    {"et_unsupported_schema.json", "field schema: unsupported schema \"2.0.0\""},
    {"et_node_missing_id.json", "nodes[2]: node without field id"},
    {"et_node_missing_name.json", "node 5, field name: missing field"},
    {"et_duplicate_id.json", "node 3, field id: duplicate node id"},
    {"et_dangling_parent.json", "node 4, field parent: dangling parent id 999 (no such node)"},
    {"et_parent_cycle.json", "node 5, field parent: parent cycle 5 -> 6 -> 7 -> 5"},
    {"et_tensor_wrong_arity.json",
     "node 3, field inputs[0]: malformed tensor entry: 5 elements, expected 6"},
    {"et_tensor_negative_numel.json", "node 3, field inputs[0]: negative numel -4"},
    {"et_tensor_device_not_string.json",
     "node 3, field inputs[0]: malformed tensor entry: element 5 (device) is not a string"},
    {"et_tensor_list_malformed.json",
     "node 3, field inputs[0][1]: malformed tensor entry: 5 elements"},
    {"et_tensor_shape_not_list.json",
     "node 3, field inputs[0]: tensor shape is not a list of integers"},
    {"et_inputs_shapes_mismatch.json",
     "node 3, field input_shapes: inputs has 2 entries but input_shapes has 1"},
    {"et_inputs_types_mismatch.json",
     "node 3, field input_types: inputs has 2 entries but input_types has 1"},
    {"et_unknown_collective.json",
     "node 7, field attrs.collective_name: unknown collective \"allsmash\""},
    {"et_split_count_mismatch.json",
     "node 7, field attrs.in_split_size: 3 split sizes but the process group has 2 ranks"},
    {"et_split_count_inconsistent.json",
     "node 6, field inputs[5]: 2 split sizes but earlier collectives on this process group "
     "list 4"},
    {"et_split_list_malformed.json",
     "node 7, field attrs.in_split_size: malformed split size list \"[4, x]\""},
    {"et_comm_record_without_name.json",
     "node 3, field inputs: record_param_comms without a collective name"},
    {"et_chakra_missing_ctrl_deps.json", "node 3, field ctrl_deps: missing field"},
    {"et_chakra_inputs_without_shapes.json", "node 3, field inputs.shapes: missing field"},
    {"et_tensor_consumed_before_comm.json",
     "node 3, field inputs: tensor 20 is consumed before node 5 (record_param_comms) produces it"},
    {"et_process_group_init_not_json.json",
     "node 3, field inputs[0]: process-group description is not a JSON list"},
};

class MalformedExecutionTrace : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedExecutionTrace, IsRejectedWithAPreciseMessage) {
  const MalformedCase& c = GetParam();
  std::string path = kMalformedDir + "/" + c.file;
  ASSERT_TRUE(std::filesystem::exists(path)) << "missing corpus file " << path;
  try {
    load_execution_trace_file(path);
    FAIL() << c.file << " was accepted";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << "message: " << message << "\nexpected to contain: " << c.expected;
    EXPECT_EQ(error.file(), path) << "the error names the file";
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, MalformedExecutionTrace, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<MalformedCase>& info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find('.'));
                           return name;
                         });

// The corpus and the table stay in step: every et_*.json file has an expected message.
TEST(MalformedExecutionTraceCorpus, EveryFileHasAnExpectedMessage) {
  std::set<std::string> listed;
  for (const MalformedCase& c : kCases)
    listed.insert(c.file);
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kMalformedDir)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with("et_"))
      continue;
    ++files;
    EXPECT_TRUE(listed.count(name)) << name << " has no row in kCases";
  }
  EXPECT_EQ(files, listed.size());
  EXPECT_GE(files, 12u);
}

}  // namespace
}  // namespace perfsim
