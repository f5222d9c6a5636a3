// Loads the real execution-trace fixtures and checks counts a reader can verify in
// ../shared/data/traces/README.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "perfsim/trace.hpp"
#include "trace_io/execution_trace_loader.hpp"

namespace perfsim {
namespace {

const std::string kDlrmArchive =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-dlrm-8xV100/dlrm_pytorch_et.tar.gz";
const std::string kResnetFile =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-resnet-2gpu/resnet_2gpu_et.json.gz";

std::string dlrm_member(int rank) {
  return kDlrmArchive + ":dlrm_pytorch_et/dlrm_eg_" + std::to_string(rank) + ".json";
}

::testing::AssertionResult fixture_exists(const std::string& path) {
  if (std::filesystem::exists(path))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "fixture missing: " << path << " (configure PERFSIM_SHARED_DATA_DIR)";
}

std::vector<const Op*> ops_with_comm(const Trace& trace, CollectiveKind kind) {
  std::vector<const Op*> result;
  for (const Op& op : trace.ops) {
    if (op.comm && op.comm->kind == kind)
      result.push_back(&op);
  }
  return result;
}

std::int64_t int_attribute(const Op& op, std::string_view name) {
  const Attribute* attribute = op.find_attribute(name);
  EXPECT_NE(attribute, nullptr) << op.name << " " << op.id << " lacks " << name;
  return attribute == nullptr ? -1 : std::get<std::int64_t>(attribute->value);
}

// Every subtree holds at most one CommInfo: the engine takes the comm of a top-level op or of
// its first descendant that has one, so a second one below would count a collective twice.
void expect_one_comm_per_subtree(const Trace& trace) {
  for (const Op& op : trace.ops) {
    if (!op.comm)
      continue;
    for (std::int64_t parent = op.parent_id; parent != kNoParent;) {
      const Op* ancestor = trace.find(parent);
      ASSERT_NE(ancestor, nullptr);
      EXPECT_FALSE(ancestor->comm.has_value())
          << "op " << op.id << " and its ancestor " << ancestor->id << " both carry CommInfo";
      parent = ancestor->parent_id;
    }
  }
}

TEST(ExecutionTraceLoader, DlrmEveryRankHas1675NodesFiveAllToAllThreeAllReduce) {
  ASSERT_TRUE(fixture_exists(kDlrmArchive));
  for (int rank = 0; rank < 8; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    Trace trace = load_execution_trace_file(dlrm_member(rank));
    EXPECT_EQ(trace.ops.size(), 1675u);
    EXPECT_EQ(trace.format, "pytorch-et/1.0.1");
    EXPECT_EQ(trace.rank, rank) << "record_param_comms records the rank";
    EXPECT_EQ(trace.world_size, 8) << "inferred from the all-to-allv split counts";
    std::size_t all_to_all = ops_with_comm(trace, CollectiveKind::kAllToAll).size() +
                             ops_with_comm(trace, CollectiveKind::kAllToAllv).size();
    EXPECT_EQ(all_to_all, 5u);
    EXPECT_EQ(ops_with_comm(trace, CollectiveKind::kAllReduce).size(), 3u);
    std::size_t with_comm = std::count_if(trace.ops.begin(), trace.ops.end(),
                                          [](const Op& op) { return op.comm.has_value(); });
    EXPECT_EQ(with_comm, 8u);
    for (const Op& op : trace.ops) {
      if (op.comm) {
        EXPECT_TRUE(op.name == "c10d::alltoall_base_" || op.name == "c10d::allreduce_") << op.name;
      }
    }
    expect_one_comm_per_subtree(trace);
    ASSERT_EQ(trace.process_groups.size(), 1u);
    EXPECT_TRUE(trace.process_groups[0].ranks.empty()) << "the world group";
  }
}

TEST(ExecutionTraceLoader, DlrmRankZeroAllReduceSizesAndAllToAllSplits) {
  ASSERT_TRUE(fixture_exists(kDlrmArchive));
  Trace trace = load_execution_trace_file(dlrm_member(0));
  std::vector<std::int64_t> elements;
  for (const Op* op : ops_with_comm(trace, CollectiveKind::kAllReduce)) {
    EXPECT_EQ(op->comm->dtype, DType::kFloat32);
    EXPECT_EQ(op->comm->bytes_in, op->comm->bytes_out);
    elements.push_back(op->comm->bytes_in / 4);
  }
  EXPECT_EQ(elements, (std::vector<std::int64_t>{394241, 112, 226960}));

  // Node 1102: alltoall_base_(output [768], input [3392], ..., output splits 8 x 96,
  // input splits [96, 224, 288, 1664, 592, 96, 192, 240]) of int32.
  const Op* uneven = trace.find(1102);
  ASSERT_NE(uneven, nullptr);
  ASSERT_TRUE(uneven->comm.has_value());
  EXPECT_EQ(uneven->comm->kind, CollectiveKind::kAllToAllv);
  EXPECT_EQ(uneven->comm->dtype, DType::kInt32);
  EXPECT_EQ(uneven->comm->bytes_in, 3392 * 4);
  EXPECT_EQ(uneven->comm->bytes_out, 768 * 4);
  EXPECT_EQ(uneven->comm->in_split_elements,
            (std::vector<std::int64_t>{96, 224, 288, 1664, 592, 96, 192, 240}));
  EXPECT_EQ(uneven->comm->out_split_elements, std::vector<std::int64_t>(8, 96));
  EXPECT_EQ(uneven->comm->group_size, 8);
  EXPECT_EQ(int_attribute(*uneven, "comm_seq"), 150);

  // Node 1067: alltoall_base_ with empty split lists: equal splits.
  const Op* even = trace.find(1067);
  ASSERT_NE(even, nullptr);
  ASSERT_TRUE(even->comm.has_value());
  EXPECT_EQ(even->comm->kind, CollectiveKind::kAllToAll);
  EXPECT_EQ(even->comm->bytes_in, 24 * 8);

  // Wait records carry no CommInfo but name the collective they wait for.
  const Op* wait = trace.find(767);
  ASSERT_NE(wait, nullptr);
  EXPECT_FALSE(wait->comm.has_value());
  EXPECT_EQ(int_attribute(*wait, "comm_wait"), 1);
  EXPECT_EQ(int_attribute(*wait, "comm_seq"), 147);
}

TEST(ExecutionTraceLoader, DlrmTreeTensorsAndAnnotations) {
  ASSERT_TRUE(fixture_exists(kDlrmArchive));
  Trace trace = load_execution_trace_file(dlrm_member(0));
  EXPECT_TRUE(std::is_sorted(trace.ops.begin(), trace.ops.end(),
                             [](const Op& a, const Op& b) { return a.id < b.id; }));
  const Op* root = trace.find(1);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->name, "[pytorch|profiler|execution_graph|process]");
  EXPECT_EQ(root->parent_id, kNoParent) << "the process root names itself as parent";
  EXPECT_TRUE(root->is_annotation);
  EXPECT_EQ(root->child_ids, (std::vector<std::int64_t>{2, 1113}))
      << "one thread root per thread (tid 1 and 2)";
  EXPECT_TRUE(trace.find(3)->is_annotation) << "## zero_grad ##";

  // Node 8: aten::as_strided(Tensor [112] float on cuda:0, ...) -> Tensor [48].
  const Op* strided = trace.find(8);
  ASSERT_NE(strided, nullptr);
  EXPECT_EQ(strided->name, "aten::as_strided");
  EXPECT_FALSE(strided->is_annotation);
  EXPECT_EQ(strided->parent_id, 7);
  EXPECT_EQ(strided->thread_id, 1);
  ASSERT_EQ(strided->inputs.size(), 1u);
  const TensorRef& input = strided->inputs[0];
  EXPECT_EQ(input.tensor_id, 5);
  EXPECT_EQ(input.storage_id, 6);
  EXPECT_EQ(input.numel, 112);
  EXPECT_EQ(input.element_bytes, 4);
  EXPECT_EQ(input.device, "cuda:0");
  EXPECT_EQ(input.dtype, DType::kFloat32);
  EXPECT_EQ(input.shape, std::vector<std::int64_t>{112});
  ASSERT_EQ(strided->outputs.size(), 1u);
  EXPECT_EQ(strided->outputs[0].shape, std::vector<std::int64_t>{48});
  EXPECT_EQ(int_attribute(*strided, "rf_id"), 4);
  EXPECT_EQ(int_attribute(*strided, "scope"), 0);
  const Attribute* schema = strided->find_attribute("op_schema");
  ASSERT_NE(schema, nullptr);
  EXPECT_TRUE(std::get<std::string>(schema->value).starts_with("aten::as_strided("));

  // Node 1245: allreduce_ of a GenericList[Tensor(float)] of one [394241] tensor.
  const Op* allreduce = trace.find(1245);
  ASSERT_NE(allreduce, nullptr);
  ASSERT_EQ(allreduce->inputs.size(), 1u);
  EXPECT_EQ(allreduce->inputs[0].shape, std::vector<std::int64_t>{394241});
  EXPECT_EQ(allreduce->inputs[0].tensor_id, 1244);

  // The engine's top-level ops exclude annotations and never start below a working op.
  std::vector<std::size_t> top = trace.top_level_positions();
  EXPECT_FALSE(top.empty());
  for (std::size_t position : top)
    EXPECT_FALSE(trace.ops[position].is_annotation);
}

TEST(ExecutionTraceLoader, ResnetChakraHas14392NodesAnd27CommRecords) {
  ASSERT_TRUE(fixture_exists(kResnetFile));
  Trace trace = load_execution_trace_file(kResnetFile);
  EXPECT_EQ(trace.ops.size(), 14392u);
  EXPECT_EQ(trace.format, "pytorch-et/1.1.0-chakra.0.0.4");
  EXPECT_EQ(trace.rank, 1) << "record_param_comms records rank 1 (devices are cuda:1)";
  EXPECT_EQ(trace.world_size, 2);
  ASSERT_EQ(trace.process_groups.size(), 1u);
  EXPECT_EQ(trace.process_groups[0].name, "0");
  EXPECT_EQ(trace.process_groups[0].description, "default_pg");
  EXPECT_TRUE(trace.process_groups[0].ranks.empty());

  std::size_t records = 0;
  std::size_t waits = 0;
  std::map<std::string, std::vector<std::int64_t>> nelems_by_collective;
  for (const Op& op : trace.ops) {
    if (op.name != "record_param_comms")
      continue;
    ++records;
    const Attribute* name = op.find_attribute("collective_name");
    ASSERT_NE(name, nullptr);
    std::string collective = std::get<std::string>(name->value);
    if (collective == "wait") {
      ++waits;
      EXPECT_EQ(int_attribute(op, "comm_wait"), 1);
      EXPECT_FALSE(op.comm.has_value());
      continue;
    }
    nelems_by_collective[collective].push_back(int_attribute(op, "in_msg_nelems"));
  }
  EXPECT_EQ(records, 27u);
  EXPECT_EQ(waits, 6u) << "2 waits per step, 3 steps";
  std::vector<std::int64_t> one_step_broadcast{53120, 53};
  std::vector<std::int64_t> one_step_allreduce{2049000, 7875584, 6563840, 6637568, 2431040};
  std::vector<std::int64_t> broadcast, allreduce;
  for (int step = 0; step < 3; ++step) {
    broadcast.insert(broadcast.end(), one_step_broadcast.begin(), one_step_broadcast.end());
    allreduce.insert(allreduce.end(), one_step_allreduce.begin(), one_step_allreduce.end());
  }
  EXPECT_EQ(nelems_by_collective["broadcast"], broadcast);
  EXPECT_EQ(nelems_by_collective["allreduce"], allreduce);

  // CommInfo sits on the c10d:: op that issued each record: 6 broadcasts, 15 all-reduces.
  std::vector<const Op*> broadcasts = ops_with_comm(trace, CollectiveKind::kBroadcast);
  std::vector<const Op*> allreduces = ops_with_comm(trace, CollectiveKind::kAllReduce);
  ASSERT_EQ(broadcasts.size(), 6u);
  ASSERT_EQ(allreduces.size(), 15u);
  for (const Op* op : broadcasts) {
    EXPECT_EQ(op->name, "c10d::broadcast_");
    EXPECT_EQ(op->comm->root_rank, 0);
  }
  EXPECT_EQ(broadcasts[1]->comm->dtype, DType::kInt64);
  EXPECT_EQ(broadcasts[1]->comm->bytes_in, 53 * 8);
  for (const Op* op : allreduces) {
    EXPECT_EQ(op->name, "c10d::allreduce_");
    EXPECT_EQ(op->comm->process_group, "0");
    EXPECT_EQ(op->comm->group_size, 2);
    EXPECT_EQ(op->comm->dtype, DType::kFloat32);
  }
  EXPECT_EQ(allreduces[0]->comm->bytes_in, 2049000 * 4);
  expect_one_comm_per_subtree(trace);
}

TEST(ExecutionTraceLoader, ResnetHasThreeProfilerSteps) {
  ASSERT_TRUE(fixture_exists(kResnetFile));
  Trace trace = load_execution_trace_file(kResnetFile);
  std::vector<std::int64_t> step_ids;
  for (const Op& op : trace.ops) {
    if (op.name.starts_with("ProfilerStep#")) {
      step_ids.push_back(op.id);
      EXPECT_TRUE(op.is_annotation);
    }
  }
  EXPECT_EQ(step_ids, (std::vector<std::int64_t>{3, 6931, 11927}));
  // Chakra attrs become attributes; the thread id comes from attr tid.
  const Op* view = trace.find(221);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->name, "aten::view");
  EXPECT_EQ(view->parent_id, 220);
  EXPECT_EQ(view->thread_id, 1);
  EXPECT_EQ(int_attribute(*view, "rf_id"), 7);
  ASSERT_EQ(view->inputs.size(), 1u);
  EXPECT_EQ(view->inputs[0].device, "cuda:1");
  EXPECT_EQ(view->inputs[0].shape, std::vector<std::int64_t>{64});
}

TEST(ExecutionTraceLoader, OneReaderLoadsSeveralTraces) {
  ASSERT_TRUE(fixture_exists(kDlrmArchive));
  ASSERT_TRUE(fixture_exists(kResnetFile));
  ExecutionTraceReader reader;
  Trace small = reader.load(io::read_input(dlrm_member(2)));
  Trace large = reader.load(io::read_input(kResnetFile));
  Trace small_again = reader.load(io::read_input(dlrm_member(2)));
  EXPECT_EQ(small.ops.size(), 1675u);
  EXPECT_EQ(large.ops.size(), 14392u);
  ASSERT_EQ(small_again.ops.size(), small.ops.size());
  for (std::size_t i = 0; i < small.ops.size(); ++i) {
    EXPECT_EQ(small_again.ops[i].id, small.ops[i].id);
    EXPECT_EQ(small_again.ops[i].name, small.ops[i].name);
    EXPECT_EQ(small_again.ops[i].inputs.size(), small.ops[i].inputs.size());
  }
  EXPECT_EQ(small_again.rank, 2);
}

TEST(ExecutionTraceLoader, CallerRankOverridesTheRecordedRank) {
  ASSERT_TRUE(fixture_exists(kDlrmArchive));
  Trace trace = load_execution_trace_file(dlrm_member(3), 5);
  EXPECT_EQ(trace.rank, 5);
}

TEST(ExecutionTraceLoader, UnknownOpNamesAreKept) {
  io::InputBytes input{"inline.json", R"json({"schema": "1.0.1", "nodes": [
    {"name": "[pytorch|profiler|execution_graph|process]", "id": 1, "parent": 1, "tid": 0,
     "inputs": [], "input_shapes": [], "input_types": [], "outputs": [], "output_shapes": [],
     "output_types": []},
    {"name": "mylib::never_seen_before", "id": 2, "parent": 1, "tid": 1,
     "inputs": [[7, 8, 0, 4, 2, "cuda:0"]], "input_shapes": [[2, 2]],
     "input_types": ["Tensor(c10::BFloat16)"], "outputs": [], "output_shapes": [],
     "output_types": []}]})json"};
  Trace trace = load_execution_trace(input);
  ASSERT_EQ(trace.ops.size(), 2u);
  EXPECT_EQ(trace.ops[1].name, "mylib::never_seen_before");
  EXPECT_FALSE(trace.ops[1].is_annotation);
  EXPECT_EQ(trace.ops[1].inputs[0].dtype, DType::kBFloat16);
  EXPECT_EQ(trace.ops[1].inputs[0].shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(trace.world_size, 1);
  EXPECT_EQ(trace.rank, 0);
}

}  // namespace
}  // namespace perfsim
