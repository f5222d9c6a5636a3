// Chakra protobuf traces (trace_io/chakra_et.hpp): generated workloads written as .et and read
// back simulate exactly like the generated traces; the nodes carry what Chakra's feeder reads;
// broken files end in InputErrors naming file and location.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "devices/device_spec.hpp"
#include "generators/dlrm/dlrm_config.hpp"
#include "generators/dlrm/dlrm_rank_generator.hpp"
#include "generators/dlrm/dlrm_sharders.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "kernels/model_duration_source.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "perfsim/error.hpp"
#include "support/tiny_llm.hpp"
#include "trace_io/chakra_et.hpp"
#include "trace_io/delimited_messages.hpp"
#include "trace_io/trace_format.hpp"

#if __has_include("et_def.pb.h")
#include "et_def.pb.h"
#define PERFSIM_TEST_CHAKRA_SCHEMA 1
#endif

namespace perfsim {
namespace {

using generators::llm::ParallelConfig;
using generators::llm::TransformerConfig;

#define REQUIRE_CHAKRA()      \
  if (!chakra_et_available()) \
  GTEST_SKIP() << "built without protobuf: no Chakra .et traces"

std::string et_bytes(const Trace& trace) {
  std::ostringstream out;
  write_chakra_et(trace, out);
  return std::move(out).str();
}

Trace round_trip(const Trace& trace) {
  return load_chakra_et(
      io::InputBytes{"perfsim." + std::to_string(trace.rank) + ".et", et_bytes(trace)});
}

class LinearCollectives final : public CommDurationSource {
 public:
  DurationUs collective_duration_us(const CollectiveCall& call) const override {
    return 20.0 + static_cast<double>(call.comm->bytes_in) * 1e-4;
  }
  std::string_view name() const override { return "test-linear"; }
};

struct Simulated {
  double iteration_us = 0;
  std::size_t ops = 0;  // simulated (top-level) ops over all ranks
};

Simulated simulate(const std::vector<Trace>& traces, const KernelDurationSource& kernels) {
  LinearCollectives collectives;
  engine::ProgramSources sources{&kernels, &collectives, {}};
  std::vector<engine::RankProgram> programs;
  Simulated result;
  for (const Trace& trace : traces) {
    programs.push_back(
        engine::build_rank_program(trace, trace.rank, static_cast<int>(traces.size()), sources));
    result.ops += trace.top_level_positions().size();
  }
  HostOverheads overheads;
  overheads.launch.kernel_gap_us = 1.0;
  engine::InProcessClockSync sync;
  for (const RankResult& rank : engine::simulate_programs(programs, overheads, sync))
    result.iteration_us = std::max(result.iteration_us, rank.iteration_us);
  return result;
}

kernels::ModelDurationSource a100_models() {
  return kernels::ModelDurationSource{kernels::KernelPredictor(devices::load_device_file(
      std::string(PERFSIM_SOURCE_DIR) + "/configs/devices/A100-80GB.json"))};
}

struct Counts {
  std::size_t kernels = 0;
  std::size_t collectives = 0;
};

Counts counts(const Trace& trace) {
  Counts result;
  for (const Op& op : trace.ops) {
    result.kernels += op.kernels.size();
    result.collectives += op.comm ? 1 : 0;
  }
  return result;
}

void expect_same_simulation(const std::vector<Trace>& generated, const std::string& label) {
  std::vector<Trace> loaded;
  for (const Trace& trace : generated) {
    loaded.push_back(round_trip(trace));
    EXPECT_EQ(loaded.back().rank, trace.rank);
    EXPECT_EQ(loaded.back().world_size, trace.world_size);
    EXPECT_EQ(loaded.back().format, std::string("chakra-et/") + kChakraEtVersion);
    EXPECT_EQ(counts(loaded.back()).kernels, counts(trace).kernels) << "rank " << trace.rank;
    EXPECT_EQ(counts(loaded.back()).collectives, counts(trace).collectives)
        << "rank " << trace.rank;
  }
  const kernels::ModelDurationSource models = a100_models();
  const Simulated direct = simulate(generated, models);
  const Simulated read_back = simulate(loaded, models);
  std::cout << label << ": generated " << direct.iteration_us << " us, " << direct.ops
            << " ops; written as Chakra .et and read back " << read_back.iteration_us << " us, "
            << read_back.ops << " ops\n";
  EXPECT_GT(direct.iteration_us, 0);
  EXPECT_EQ(read_back.ops, direct.ops);
  EXPECT_DOUBLE_EQ(read_back.iteration_us, direct.iteration_us);
}

TEST(ChakraEt, GeneratedLlmRanksSimulateExactlyAfterTheRoundTrip) {
  REQUIRE_CHAKRA();
  const ParallelConfig parallel = test_support::tiny_tp2_pp2_dp2();
  std::vector<Trace> generated;
  for (int rank = 0; rank < parallel.world_size(); ++rank)
    generated.push_back(
        generators::llm::generate_llm_rank(test_support::tiny_llama(), parallel, rank));
  expect_same_simulation(generated, "tiny TP2 PP2 DP2");
}

// Two interleaved stages pair gradients on the rank pair's second message stream
// (CommInfo::match_tag 1); the .et keeps it ("p2p_match_tag" beside comm_tag, which holds the
// sequence number), so the transfers pair as generated and the iteration is the same.
TEST(ChakraEt, TwoStageInterleavedMatchTagsSurviveTheRoundTrip) {
  REQUIRE_CHAKRA();
  ParallelConfig parallel = test_support::tiny_tp2_pp2_dp2();
  parallel.virtual_stages = 2;
  std::vector<Trace> generated;
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    generated.push_back(
        generators::llm::generate_llm_rank(test_support::tiny_llama(), parallel, rank));
    const Trace loaded = round_trip(generated.back());
    std::vector<std::int64_t> written;
    std::vector<std::int64_t> read;
    for (const Op& op : generated.back().ops)
      if (op.comm && is_point_to_point(op.comm->kind))
        written.push_back(op.comm->match_tag);
    for (const Op& op : loaded.ops)
      if (op.comm && is_point_to_point(op.comm->kind))
        read.push_back(op.comm->match_tag);
    EXPECT_EQ(read, written) << "rank " << rank;
    EXPECT_NE(std::count(written.begin(), written.end(), 1), 0) << "rank " << rank;
  }
  expect_same_simulation(generated, "tiny TP2 PP2 VP2 DP2");
}

TEST(ChakraEt, GeneratedDlrmRanksSimulateExactlyAfterTheRoundTrip) {
  REQUIRE_CHAKRA();
  namespace dlrm = generators::dlrm;
  const dlrm::DlrmConfig config = dlrm::load_dlrm_config(std::string(PERFSIM_SOURCE_DIR) +
                                                         "/configs/dlrm/dlrm-small-4gpu.json");
  const dlrm::ShardingPlan plan = dlrm::shard_tables(
      config.tables, dlrm::Sharder::kSizeLookupGreedy, {config.ranks, config.dtype, 0, 0});
  std::vector<Trace> generated;
  for (int rank = 0; rank < config.ranks; ++rank)
    generated.push_back(dlrm::generate_dlrm_rank(config, plan, rank));
  for (const Trace& trace : generated) {
    const Trace loaded = round_trip(trace);
    for (const Op& op : trace.ops) {
      if (!op.comm || op.comm->kind != CollectiveKind::kAllToAllv)
        continue;
      const auto same = std::find_if(loaded.ops.begin(), loaded.ops.end(), [&](const Op& other) {
        return other.comm && other.comm->kind == CollectiveKind::kAllToAllv &&
               other.comm->in_split_elements == op.comm->in_split_elements &&
               other.comm->bytes_in == op.comm->bytes_in;
      });
      EXPECT_NE(same, loaded.ops.end()) << "rank " << trace.rank << " op " << op.id;
    }
  }
  expect_same_simulation(generated, "dlrm-small-4gpu");
}

TEST(ChakraEt, ContentDetectionTellsProtobufFromJson) {
  REQUIRE_CHAKRA();
  const Trace trace = generators::llm::generate_llm_rank(test_support::tiny_llama(),
                                                         test_support::tiny_tp2_pp2_dp2(), 0);
  const std::string bytes = et_bytes(trace);
  EXPECT_TRUE(trace_io::is_chakra_protobuf(bytes));
  EXPECT_TRUE(trace_io::frames_exactly(bytes));
  EXPECT_EQ(trace_io::detect_trace_format({"x.et", bytes}), trace_io::TraceFormat::kChakraProtobuf);
  EXPECT_FALSE(trace_io::is_chakra_protobuf(R"({"schema": "1.1.0-chakra.0.0.4", "nodes": []})"));
  EXPECT_EQ(trace_io::load_execution_trace_any({"x.et", bytes}).ops.size(),
            round_trip(trace).ops.size());
}

TEST(ChakraEt, NamesLongerThan127BytesNeedTwoBytePrefixesAndSurvive) {
  REQUIRE_CHAKRA();
  Trace trace = generators::llm::generate_llm_rank(test_support::tiny_llama(),
                                                   test_support::tiny_tp2_pp2_dp2(), 0);
  const std::string long_name = "aten::" + std::string(300, 'x');
  trace.ops.front().name = long_name;
  const std::string bytes = et_bytes(trace);
  const Trace loaded = load_chakra_et({"long.et", bytes});
  EXPECT_TRUE(std::any_of(loaded.ops.begin(), loaded.ops.end(),
                          [&](const Op& op) { return op.name == long_name; }));
  const auto messages = trace_io::split_delimited(bytes, "long.et");
  EXPECT_TRUE(std::any_of(messages.begin(), messages.end(), [](const auto& message) {
    return message.bytes.size() > 300;  // its prefix takes two bytes
  }));
}

// Every cut of a written file is an InputError naming the file (or, cut at a message
// boundary after the first node, a shorter trace): never a crash or another exception.
TEST(ChakraEt, EveryTruncationIsAnInputErrorOrAShorterTrace) {
  REQUIRE_CHAKRA();
  ParallelConfig single;
  TransformerConfig model = test_support::tiny_llama();
  model.layers = 1;
  const std::string bytes = et_bytes(generators::llm::generate_llm_rank(model, single, 0));
  int errors = 0;
  for (std::size_t length = 0; length < bytes.size(); length += 7) {
    try {
      load_chakra_et({"cut.et", bytes.substr(0, length)});
    } catch (const InputError& error) {
      ++errors;
      EXPECT_EQ(error.file(), "cut.et");
    }
  }
  EXPECT_GT(errors, 0);
  try {
    load_chakra_et({"cut.et", bytes.substr(0, bytes.size() - 3)});
    FAIL() << "a file cut inside its last node loaded";
  } catch (const InputError& error) {
    EXPECT_NE(error.location().find("byte "), std::string::npos) << error.what();
    EXPECT_NE(error.problem().find("truncated"), std::string::npos) << error.what();
  }
}

void expect_input_error(const std::string& bytes, const std::string& fragment) {
  try {
    load_chakra_et({"bad.et", bytes});
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "bad.et");
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(ChakraEt, WrongMagicAndEmptyFilesAreInputErrors) {
  REQUIRE_CHAKRA();
  expect_input_error("", "empty file");
  expect_input_error("GIF89a not a trace", "Chakra protobuf framing");
  std::string only_metadata;
  trace_io::append_delimited(only_metadata, "");
  expect_input_error(only_metadata, "holds no node");
  std::string garbage_node = only_metadata;
  trace_io::append_delimited(garbage_node, "\xff\xff\xff");
  expect_input_error(garbage_node, "message 1 (byte 1): not a Chakra Node message");
}

#ifdef PERFSIM_TEST_CHAKRA_SCHEMA
std::string frame(const std::vector<const google::protobuf::MessageLite*>& messages) {
  std::string out;
  for (const auto* message : messages)
    trace_io::append_delimited(out, message->SerializeAsString());
  return out;
}

TEST(ChakraEt, WrittenNodesCarryWhatChakrasFeederReads) {
  REQUIRE_CHAKRA();
  const Trace trace = generators::llm::generate_llm_rank(test_support::tiny_llama(),
                                                         test_support::tiny_tp2_pp2_dp2(), 1);
  const std::string bytes = et_bytes(trace);
  const auto messages = trace_io::split_delimited(bytes, "x.et");
  ChakraProtoMsg::GlobalMetadata metadata;
  ASSERT_TRUE(metadata.ParseFromArray(messages[0].bytes.data(),
                                      static_cast<int>(messages[0].bytes.size())));
  EXPECT_EQ(metadata.version(), kChakraEtVersion);
  int collectives = 0, sends = 0, receives = 0, computes = 0, host = 0;
  std::uint64_t previous_id = 0;
  for (std::size_t i = 1; i < messages.size(); ++i) {
    ChakraProtoMsg::Node node;
    ASSERT_TRUE(
        node.ParseFromArray(messages[i].bytes.data(), static_cast<int>(messages[i].bytes.size())));
    EXPECT_GT(node.id(), previous_id);  // id order, as the converter writes
    previous_id = node.id();
    std::map<std::string, const ChakraProtoMsg::AttributeProto*> attrs;
    for (const auto& attr : node.attr())
      attrs[attr.name()] = &attr;
    ASSERT_TRUE(attrs.count("is_cpu_op")) << node.name();
    EXPECT_TRUE(attrs["is_cpu_op"]->has_bool_val());
    for (std::uint64_t dep : node.data_deps())
      EXPECT_LT(dep, node.id()) << node.name();  // a DAG in file order
    if (attrs["is_cpu_op"]->bool_val()) {
      ++host;
      continue;
    }
    EXPECT_EQ(node.ctrl_deps_size(), 1) << node.name();
    switch (node.type()) {
      case ChakraProtoMsg::COMM_COLL_NODE:
        ++collectives;
        ASSERT_TRUE(attrs.count("comm_type") && attrs.count("comm_size")) << node.name();
        EXPECT_TRUE(attrs["comm_type"]->has_int64_val());
        EXPECT_GT(attrs["comm_size"]->int64_val(), 0);
        EXPECT_FALSE(attrs.at("pg_name")->string_val().empty());
        break;
      case ChakraProtoMsg::COMM_SEND_NODE:
      case ChakraProtoMsg::COMM_RECV_NODE:
        (node.type() == ChakraProtoMsg::COMM_SEND_NODE ? sends : receives)++;
        EXPECT_TRUE(attrs.at("comm_src")->has_int32_val());
        EXPECT_TRUE(attrs.at("comm_dst")->has_int32_val());
        EXPECT_NE(attrs.at("comm_src")->int32_val(), attrs.at("comm_dst")->int32_val());
        break;
      case ChakraProtoMsg::COMP_NODE:
        ++computes;
        EXPECT_TRUE(attrs.at("num_ops")->has_int64_val());
        EXPECT_TRUE(attrs.at("tensor_size")->has_uint64_val());
        break;
      default:
        ADD_FAILURE() << "device node of type " << node.type() << ": " << node.name();
    }
  }
  const Counts generated = counts(trace);
  EXPECT_EQ(static_cast<std::size_t>(collectives + sends + receives), generated.collectives);
  EXPECT_EQ(static_cast<std::size_t>(collectives + sends + receives + computes), generated.kernels);
  EXPECT_GT(sends + receives, 0);  // a pipeline stage sends and receives activations
  EXPECT_GT(host, computes);
}

TEST(ChakraEt, UnsupportedCollectivesAndPeerlessSendsAreInputErrors) {
  REQUIRE_CHAKRA();
  ChakraProtoMsg::GlobalMetadata metadata;
  metadata.set_version("0.0.4");
  ChakraProtoMsg::Node node;
  node.set_id(1);
  node.set_name("gather");
  node.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  auto* type = node.add_attr();
  type->set_name("comm_type");
  type->set_int64_val(ChakraProtoMsg::GATHER);
  expect_input_error(frame({&metadata, &node}), "node 1, field comm_type: collective GATHER");
  node.set_type(ChakraProtoMsg::COMM_SEND_NODE);
  expect_input_error(frame({&metadata, &node}), "node 1, field comm_dst");
  auto* peer = node.add_attr();
  peer->set_name("comm_dst");
  peer->set_int64_val(1);
  auto* match_tag = node.add_attr();
  match_tag->set_name("p2p_match_tag");
  match_tag->set_int64_val(-1);
  expect_input_error(frame({&metadata, &node}), "node 1, field p2p_match_tag: must be between");
  ChakraProtoMsg::Node host;
  host.set_id(2);
  host.set_name("aten::mm");
  host.set_type(ChakraProtoMsg::COMP_NODE);
  host.mutable_inputs()->set_values("[[1, 2, 0, 4, 2, 'cuda:0'");
  expect_input_error(frame({&metadata, &host}), "node 2, field inputs.values: not a list");
}
#endif

TEST(ChakraEt, WithoutProtobufEveryEntryPointSaysSo) {
  if (chakra_et_available())
    GTEST_SKIP() << "built with protobuf";
  EXPECT_THROW(load_chakra_et({"x.et", "\x02\x0a\x00"}), RuntimeFailure);
  std::ostringstream out;
  EXPECT_THROW(write_chakra_et(Trace{}, out), RuntimeFailure);
}

}  // namespace
}  // namespace perfsim
