// The traversal rules of seed 000 Algorithm 3 and seed 001 Algorithm 1 on hand-built traces
// whose clocks are computed by hand below.
#include <gtest/gtest.h>

#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "perfsim/error.hpp"
#include "support/trace_builder.hpp"

namespace perfsim::engine {
namespace {

using testing::TraceBuilder;
using testing::zero_overheads;

struct Fixture {
  MeasuredKernelDurations kernels;
  MeasuredCommDurations communication;
  ProgramSources sources() const { return {&kernels, &communication, {}}; }
};

std::vector<RankResult> simulate(const std::vector<Trace>& traces, const HostOverheads& overheads,
                                 bool timeline = false) {
  Fixture fixture;
  std::vector<RankProgram> programs;
  for (std::size_t rank = 0; rank < traces.size(); ++rank) {
    programs.push_back(build_rank_program(traces[rank], static_cast<int>(rank),
                                          static_cast<int>(traces.size()), fixture.sources()));
  }
  InProcessClockSync sync;
  std::vector<RankSimulator> simulators;
  for (const RankProgram& program : programs) {
    simulators.emplace_back(program, overheads, sync, timeline);
  }
  run_to_completion(simulators, sync);
  std::vector<RankResult> results;
  for (const RankSimulator& simulator : simulators)
    results.push_back(simulator.result());
  return results;
}

// Seed 000 Algorithm 3 with T1=2, T2=3, T3=4, T4=10 (kernel starts T4/2 after the call), T5=1
// and the +1 us kernel gap. Op A launches kernels of 20 and 30 us; op B launches nothing.
//   A: cpu 0 +T1 = 2, +T2 = 5; k1 ready 5+5 = 10, runs [10, 30]; cpu +T4 = 15, +T5 = 16;
//      k2 ready 16+5 = 21, stream free at 30+1 = 31, runs [31, 61]; cpu +T4 = 26, +T3 = 30.
//   B: cpu +T1 = 32, no kernels +T5 = 33.  Iteration = max(33, 61) = 61; busy 50, idle 11.
TEST(RankSimulator, SingleRankAlgorithm3ClocksByHand) {
  HostOverheads overheads;
  overheads.all_ops.t1.mean_us = 2;
  overheads.all_ops.t2.mean_us = 3;
  overheads.all_ops.t3.mean_us = 4;
  overheads.all_ops.t5.mean_us = 1;
  overheads.t4_all.mean_us = 10;
  overheads.launch.kernel_gap_us = 1;
  overheads.launch.launch_fraction_of_t4 = 0.5;
  Trace trace = TraceBuilder().op("A", {20, 30}).op("B", {}).build();
  auto results = simulate({trace}, overheads, /*timeline=*/true);
  ASSERT_EQ(results.size(), 1u);
  const RankResult& result = results[0];
  EXPECT_DOUBLE_EQ(result.cpu_us, 33);
  EXPECT_DOUBLE_EQ(result.iteration_us, 61);
  EXPECT_DOUBLE_EQ(result.kernel_time_us, 50);
  EXPECT_DOUBLE_EQ(result.gpu_busy_us, 50);
  EXPECT_DOUBLE_EQ(result.gpu_idle_us, 11);
  ASSERT_GE(result.timeline.size(), 2u);
  EXPECT_DOUBLE_EQ(result.timeline[0].start_us, 10);
  EXPECT_DOUBLE_EQ(result.timeline[1].start_us, 31);
}

// Seed 001 Fig. 5, both synchronizations, all overheads zero.
// Rank 0: compute 100, all-reduce (its kernel took 70 us), independent op E 40, op D (10)
//         consuming the all-reduce output.
// Rank 1: compute 300, all-reduce (kernel 50 us: it arrived last), op D (10).
// Inter-rank: ready 100 and 300 -> start 300, duration min(70, 50) = 50, end 350 on both.
// Intra-rank: E does not depend on the all-reduce and runs [100, 140] on rank 0; D waits for
// the all-reduce: [350, 360] on both ranks. Exposed communication: rank 0 350-140 = 210,
// rank 1 350-300 = 50.
TEST(RankSimulator, InterAndIntraRankSynchronizationByHand) {
  const std::int64_t reduced = 42;
  Trace rank0 = TraceBuilder(0, 2)
                    .op("compute", {100})
                    .collective(CollectiveKind::kAllReduce, 4096, 70, reduced)
                    .op("E", {40})
                    .op("D", {10}, kDefaultComputeStream, {reduced})
                    .build();
  Trace rank1 = TraceBuilder(1, 2)
                    .op("compute", {300})
                    .collective(CollectiveKind::kAllReduce, 4096, 50, reduced)
                    .op("D", {10}, kDefaultComputeStream, {reduced})
                    .build();
  auto results = simulate({rank0, rank1}, zero_overheads(), true);
  EXPECT_DOUBLE_EQ(results[0].iteration_us, 360);
  EXPECT_DOUBLE_EQ(results[1].iteration_us, 360);
  EXPECT_DOUBLE_EQ(results[0].groups.at("").time_us, 50);
  EXPECT_DOUBLE_EQ(results[0].groups.at("").exposed_us, 210);
  EXPECT_DOUBLE_EQ(results[1].groups.at("").exposed_us, 50);
  // E overlapped the all-reduce on rank 0.
  bool found_e = false;
  for (const TimelineSlice& slice : results[0].timeline) {
    if (slice.name == "E_kernel") {
      found_e = true;
      EXPECT_DOUBLE_EQ(slice.start_us, 100);
    }
  }
  EXPECT_TRUE(found_e);
  EXPECT_DOUBLE_EQ(results[0].by_category_us[static_cast<int>(KernelCategory::kCommunication)], 50);
}

// A wait op joins the last collective, as c10d Work.wait() does.
TEST(RankSimulator, WaitOpJoinsLastCollective) {
  Trace rank0 = TraceBuilder(0, 2)
                    .collective(CollectiveKind::kAllToAll, 1024, 30)
                    .wait()
                    .op("after", {5})
                    .build();
  Trace rank1 = TraceBuilder(1, 2)
                    .op("late", {80})
                    .collective(CollectiveKind::kAllToAll, 1024, 30)
                    .wait()
                    .op("after", {5})
                    .build();
  auto results = simulate({rank0, rank1}, zero_overheads());
  // Collective: ready 0 and 80 -> [80, 110]; "after" runs [110, 115] on both ranks.
  EXPECT_DOUBLE_EQ(results[0].iteration_us, 115);
  EXPECT_DOUBLE_EQ(results[1].iteration_us, 115);
}

// Without a wait or a dependent tensor, compute does not wait for communication.
TEST(RankSimulator, IndependentComputeOverlapsCommunication) {
  Trace rank0 =
      TraceBuilder(0, 1).collective(CollectiveKind::kAllReduce, 1024, 100).op("x", {10}).build();
  auto results = simulate({rank0}, zero_overheads());
  EXPECT_DOUBLE_EQ(results[0].iteration_us, 100);
  EXPECT_DOUBLE_EQ(results[0].gpu_busy_us, 100);
}

TEST(RankSimulator, MissingCollectiveIsReportedAsDeadlockNotHang) {
  Trace rank0 = TraceBuilder(0, 2).collective(CollectiveKind::kAllReduce, 64, 10).build();
  Trace rank1 = TraceBuilder(1, 2).op("only compute", {10}).build();
  try {
    simulate({rank0, rank1}, zero_overheads());
    FAIL() << "expected a deadlock error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("rank 0 waits for collective world#0"),
              std::string::npos)
        << error.what();
  }
}

TEST(RankSimulator, ProcessGroupsSynchronizeOnlyTheirMembers) {
  // Ranks 0,1 in group "a"; rank 2 alone does compute.
  auto make = [](int rank, DurationUs before) {
    TraceBuilder builder(rank, 3);
    builder.group("a", {0, 1});
    builder.op("c", {before});
    if (rank < 2)
      builder.collective(CollectiveKind::kAllReduce, 64, 10, 7, "a").op("d", {1}, 7, {7});
    return builder.build();
  };
  auto results = simulate({make(0, 10), make(1, 20), make(2, 500)}, zero_overheads());
  EXPECT_DOUBLE_EQ(results[0].iteration_us, 31);  // [20, 30] all-reduce, d [30, 31]
  EXPECT_DOUBLE_EQ(results[1].iteration_us, 31);
  EXPECT_DOUBLE_EQ(results[2].iteration_us, 500);
}

}  // namespace
}  // namespace perfsim::engine
