// Chakra .et files perfsim did not write (tests/data/chakra, made with protoc --encode from
// the text-format sources beside them): the layouts of Chakra's PyTorch converter and of its
// generator.
#include <gtest/gtest.h>

#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "perfsim/error.hpp"
#include "trace_io/chakra_et.hpp"
#include "trace_io/trace_format.hpp"

namespace perfsim {
namespace {

const std::string kDir = std::string(PERFSIM_TEST_DATA_DIR) + "/chakra/";

#define REQUIRE_CHAKRA()      \
  if (!chakra_et_available()) \
  GTEST_SKIP() << "built without protobuf: no Chakra .et traces"

const Op& op_named(const Trace& trace, const std::string& name) {
  for (const Op& op : trace.ops)
    if (op.name == name)
      return op;
  throw std::runtime_error("no op " + name);
}

TEST(ChakraEtFixtures, ConverterLayoutReadsLikeItsPyTorchTrace) {
  REQUIRE_CHAKRA();
  const Trace trace = trace_io::load_trace(kDir + "converter_allreduce.1.et");
  EXPECT_EQ(trace.format, "chakra-et/0.0.4");
  EXPECT_EQ(trace.rank, 1);  // from record_param_comms: the metadata names none
  EXPECT_EQ(trace.world_size, 2);
  // The thread root's ctrl_dep names the process root the converter dropped: a root.
  EXPECT_TRUE(op_named(trace, "[pytorch|profiler|execution_trace|thread]").is_annotation);
  EXPECT_TRUE(op_named(trace, "## process_group:init ##").is_annotation);

  const Op& mm = op_named(trace, "aten::mm");
  EXPECT_FALSE(mm.is_annotation);
  ASSERT_EQ(mm.inputs.size(), 2u);
  EXPECT_EQ(mm.inputs[0].shape, (std::vector<std::int64_t>{256, 256}));
  EXPECT_EQ(mm.inputs[0].dtype, DType::kBFloat16);
  EXPECT_EQ(mm.inputs[0].device, "cuda:0");
  ASSERT_EQ(mm.kernels.size(), 1u);
  EXPECT_EQ(mm.kernels[0].category, KernelCategory::kGemm);
  EXPECT_EQ(mm.kernels[0].stream, 7);
  EXPECT_EQ(mm.kernels[0].measured_duration_us, 12.0);
  ASSERT_NE(mm.find_attribute("op_schema"), nullptr);

  const Op& allreduce = op_named(trace, "c10d::allreduce_");
  ASSERT_TRUE(allreduce.comm.has_value());
  EXPECT_EQ(allreduce.comm->kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(allreduce.comm->process_group, "0");
  EXPECT_EQ(allreduce.comm->dtype, DType::kBFloat16);
  EXPECT_EQ(allreduce.comm->bytes_in, 256 * 256 * 2);
  ASSERT_EQ(allreduce.kernels.size(), 1u);
  EXPECT_EQ(allreduce.kernels[0].category, KernelCategory::kCommunication);
  EXPECT_EQ(allreduce.kernels[0].stream, 24);
  ASSERT_EQ(trace.process_groups.size(), 1u);
  EXPECT_EQ(trace.process_groups[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(trace.top_level_positions().size(), 2u);  // the GEMM and the all-reduce
}

TEST(ChakraEtFixtures, GeneratorLayoutIsDeviceWorkWithRanksFromFileNames) {
  REQUIRE_CHAKRA();
  for (int rank : {0, 1}) {
    const Trace trace =
        trace_io::load_trace(kDir + "generator_allreduce." + std::to_string(rank) + ".et");
    EXPECT_EQ(trace.rank, rank);
    ASSERT_EQ(trace.ops.size(), 2u);
    for (const Op& op : trace.ops)
      EXPECT_FALSE(op.is_annotation) << op.name;  // roots without a caller still do work
    EXPECT_EQ(trace.ops[0].kernels.at(0).measured_duration_us, 5.0);
    const Op& allreduce = trace.ops[1];
    ASSERT_TRUE(allreduce.comm.has_value());
    EXPECT_EQ(allreduce.comm->kind, CollectiveKind::kAllReduce);
    EXPECT_EQ(allreduce.comm->bytes_in, 65536);  // comm_size as uint64_val
    EXPECT_EQ(allreduce.comm->process_group, "");
  }
}

class LinearCollectives final : public CommDurationSource {
 public:
  DurationUs collective_duration_us(const CollectiveCall& call) const override {
    return 20.0 + static_cast<double>(call.comm->bytes_in) * 1e-4;
  }
  std::string_view name() const override { return "test-linear"; }
};

// The generator's trace is 5 us of compute, then an all-reduce of 65536 bytes: with measured
// kernel durations, no host overheads and a collective of 20 + bytes x 1e-4 us, an iteration
// is their sum on both ranks.
TEST(ChakraEtFixtures, GeneratorTraceSimulatesItsMeasuredComputeThenTheCollective) {
  REQUIRE_CHAKRA();
  engine::MeasuredKernelDurations measured;
  LinearCollectives collectives;
  engine::ProgramSources sources{&measured, &collectives, {}};
  std::vector<Trace> traces;
  std::vector<engine::RankProgram> programs;
  for (int rank : {0, 1})
    traces.push_back(
        trace_io::load_trace(kDir + "generator_allreduce." + std::to_string(rank) + ".et"));
  for (const Trace& trace : traces)
    programs.push_back(engine::build_rank_program(trace, trace.rank, 2, sources));
  HostOverheads none;
  none.launch.kernel_gap_us = 0;
  engine::InProcessClockSync sync;
  const std::vector<RankResult> results = engine::simulate_programs(programs, none, sync);
  ASSERT_EQ(results.size(), 2u);
  for (const RankResult& result : results)
    EXPECT_NEAR(result.iteration_us, 5.0 + 20.0 + 65536 * 1e-4, 1e-9);
}

}  // namespace
}  // namespace perfsim
