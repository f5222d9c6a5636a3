// Every collective of a top-level op is kept (a compiled backward issues many), each sized
// from the record_param_comms args the trace carries, and kernels queued before the trace do
// not need a model (tests/data/kineto/make_traces.py describes the hand-made traces).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "perfsim/error.hpp"
#include "support/trace_builder.hpp"
#include "trace_io/kineto_loader.hpp"

namespace perfsim::engine {
namespace {

const std::string kData = std::string(PERFSIM_TEST_DATA_DIR) + "/kineto/";

// What kernel models do: refuse communication kernels (the collective model times those).
class ModelLikeKernelDurations final : public KernelDurationSource {
 public:
  DurationUs kernel_duration_us(const Op&, const Kernel& kernel) const override {
    if (kernel.category == KernelCategory::kCommunication)
      throw RuntimeFailure("communication kernels are timed by the collective models");
    return 10;
  }
  std::string_view name() const override { return "model-like"; }
};

std::vector<const SimOp*> collective_ops(const RankProgram& program) {
  std::vector<const SimOp*> ops;
  for (const SimOp& op : program.ops) {
    if (op.collective)
      ops.push_back(&op);
  }
  return ops;
}

TEST(RankProgramCollectives, EveryAllReduceOfACompiledBackwardIsKeptAndSized) {
  const Trace trace = trace_io::load_kineto_trace_file(kData + "job2_rank0.json");
  MeasuredKernelDurations kernels;
  MeasuredCommDurations comm;
  const RankProgram program = build_rank_program(trace, 0, 2, {&kernels, &comm, {}});
  const std::vector<const SimOp*> ops = collective_ops(program);
  ASSERT_EQ(ops.size(), 3u);
  const Bytes expected_bytes[] = {4096, 8192, 16384};  // 1024, 2048, 4096 floats
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const SimCollective& collective = *ops[i]->collective;
    EXPECT_EQ(ops[i]->name, "CompiledFunctionBackward");
    EXPECT_EQ(collective.comm.kind, CollectiveKind::kAllReduce);
    EXPECT_EQ(collective.comm.bytes_in, expected_bytes[i]);
    EXPECT_EQ(collective.group, "0");  // named by "Process Group Ranks" [0, 1]
    EXPECT_EQ(collective.members, (std::vector<int>{0, 1}));
    EXPECT_EQ(collective.index_in_group, i);
    EXPECT_EQ(collective.duration_us, 50);
    EXPECT_EQ(ops[i]->continues_previous, i > 0);
    EXPECT_EQ(ops[i]->continued_by_next, i + 1 < ops.size());
  }
  EXPECT_EQ(program.coverage.collectives, 3u);
  EXPECT_EQ(program.coverage.collectives_without_size, 0u);
  // The compiled backward's elementwise kernels are all still there, around the collectives.
  std::size_t elementwise = 0;
  for (const SimOp* op : ops) {
    for (const SimKernel& kernel : op->kernels)
      elementwise += kernel.name == "vectorized_elementwise_kernel";
  }
  EXPECT_EQ(elementwise, 3u);
}

TEST(RankProgramCollectives, QueuedNcclKernelNeedsNoModel) {
  const Trace trace = trace_io::load_kineto_trace_file(kData + "job2_rank0.json");
  ModelLikeKernelDurations kernels;
  MeasuredCommDurations comm;
  RankProgram program;
  ASSERT_NO_THROW(program = build_rank_program(trace, 0, 2, {&kernels, &comm, {}}));
  ASSERT_FALSE(program.ops.empty());
  ASSERT_TRUE(program.ops.front().queued_before_trace);
  EXPECT_EQ(program.ops.front().kernels.front().duration_us, 60);  // as measured
}

// nccl:* annotations with no record_param_comms, all inside one working op: each is its own
// collective (before, the first took the op and the others were silently dropped).
TEST(RankProgramCollectives, AnnotationOnlyCollectivesInsideOneOpAreAllKept) {
  std::string events;
  for (int i = 0; i < 4; ++i) {
    const std::string start = std::to_string(1010 + 20 * i);
    const std::string corr = std::to_string(10 + i);
    events +=
        R"(,{"ph":"X","cat":"user_annotation","name":"nccl:all_reduce","pid":1,"tid":1,"ts":)" +
        start + R"(,"dur":10,"args":{"Input Dims":[[256]],"Input type":["float"]}})";
    events += R"(,{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" +
              std::to_string(1012 + 20 * i) + R"(,"dur":2,"args":{"correlation":)" + corr + "}}";
    events +=
        R"(,{"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float","pid":1,"tid":24,"ts":)" +
        std::to_string(1200 + 30 * i) + R"(,"dur":25,"args":{"stream":24,"correlation":)" + corr +
        "}}";
  }
  const std::string json =
      R"({"distributedInfo":{"rank":0,"world_size":1},"traceEvents":[)"
      R"({"ph":"X","cat":"cpu_op","name":"CompiledFunctionBackward","pid":1,"tid":1,"ts":1000,"dur":100})" +
      events + "]}";
  const trace_io::KinetoLoad load = trace_io::load_kineto_trace_with_report({"inline.json", json});
  EXPECT_EQ(load.report.collectives, 4);
  EXPECT_EQ(load.report.dropped_collectives, 0);
  MeasuredKernelDurations kernels;
  MeasuredCommDurations comm;
  const RankProgram program = build_rank_program(load.trace, 0, 1, {&kernels, &comm, {}});
  const std::vector<const SimOp*> ops = collective_ops(program);
  ASSERT_EQ(ops.size(), 4u);
  for (const SimOp* op : ops)
    EXPECT_EQ(op->collective->comm.bytes_in, 1024);  // 256 floats from Input Dims
}

// Newer profilers' record_param_comms args: a send's peer ("Dst Rank") and a group given by
// start and stride ("Global rank start" 2, stride 2, size 2: ranks 2 and 4).
TEST(RankProgramCollectives, PeersAndStridedGroupsComeFromTheRecordArgs) {
  const std::string json = R"({"distributedInfo":{"rank":2,"world_size":6},"traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":10,"dur":10,
     "args":{"Collective name":"send","dtype":"Float","In msg nelems":256,"Out msg nelems":256,
             "Group size":6,"Process Group Name":"0","Dst Rank":3}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":12,"dur":2,"args":{"correlation":1}},
    {"ph":"X","cat":"kernel","name":"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t","pid":1,"tid":24,"ts":30,"dur":5,"args":{"stream":24,"correlation":1}},
    {"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":40,"dur":10,
     "args":{"Collective name":"allreduce","dtype":"BFloat16","In msg nelems":100,"Out msg nelems":100,
             "Group size":2,"Process Group Name":"5","Global rank start":2,"Global rank stride":2}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":42,"dur":2,"args":{"correlation":2}},
    {"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_bf16","pid":1,"tid":24,"ts":60,"dur":5,"args":{"stream":24,"correlation":2}}]})";
  const Trace trace = trace_io::load_kineto_trace({"p2p.json", json});
  MeasuredKernelDurations kernels;
  MeasuredCommDurations comm;
  const RankProgram program = build_rank_program(trace, 2, 6, {&kernels, &comm, {}});
  const std::vector<const SimOp*> ops = collective_ops(program);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0]->collective->comm.kind, CollectiveKind::kSend);
  EXPECT_EQ(ops[0]->collective->comm.peer_rank, 3);
  EXPECT_EQ(ops[0]->collective->group, point_to_point_group_name(2, 3));
  EXPECT_EQ(ops[1]->collective->group, "5");
  EXPECT_EQ(ops[1]->collective->members, (std::vector<int>{2, 4}));
  EXPECT_EQ(ops[1]->collective->comm.bytes_in, 200);  // 100 bf16
  EXPECT_EQ(program.coverage.collectives_of_unlisted_groups, 0u);
}

// A wait bound to its work handle (execution traces: the wait record's sequence number) joins
// that collective, not the most recent one. Zero overheads: collective 5 runs [0, 1000] on
// stream 24, collective 6 [0, 10] on stream 25; the op after the wait on 5 starts at 1000
// (joining the most recent collective would start it at 10).
TEST(RankProgramCollectives, WaitJoinsTheCollectiveOfItsWorkHandle) {
  Trace trace = testing::TraceBuilder()
                    .collective(CollectiveKind::kAllReduce, 1024, 1000, -1, "", 24)
                    .collective(CollectiveKind::kAllReduce, 1024, 10, -1, "", 25)
                    .wait("record_param_comms")
                    .op("after", {1})
                    .build();
  trace.ops[0].attributes.push_back({"comm_seq", std::int64_t{5}});
  trace.ops[1].attributes.push_back({"comm_seq", std::int64_t{6}});
  trace.ops[2].attributes.push_back({"comm_wait", std::int64_t{1}});
  trace.ops[2].attributes.push_back({"comm_seq", std::int64_t{5}});
  MeasuredKernelDurations kernels;
  MeasuredCommDurations comm;
  const RankProgram program = build_rank_program(trace, 0, 1, {&kernels, &comm, {}});
  ASSERT_EQ(program.ops.size(), 4u);
  EXPECT_EQ(program.ops[2].waits_for_seq, 5);
  UnsynchronizedClockSync sync;
  const HostOverheads overheads = testing::zero_overheads();  // outlives the simulator
  std::vector<RankSimulator> simulators;
  simulators.emplace_back(program, overheads, sync, /*record_timeline=*/true);
  run_to_completion(simulators, sync);
  const RankResult result = simulators.front().result();
  bool found = false;
  for (const auto& entry : result.timeline) {
    if (entry.name == "after_kernel") {
      EXPECT_DOUBLE_EQ(entry.start_us, 1000);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace perfsim::engine
