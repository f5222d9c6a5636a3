// A simulated rank drops a posted collective's record once it has resolved and nothing names it
// any more (rank_simulator.hpp, posted_): this checks that a long program holds few records, and
// that its results are bit for bit those of the same program run keeping every record (its
// collectives carry work-handle sequence numbers, which keep them all: a wait may name any).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "support/trace_builder.hpp"

namespace perfsim::engine {
namespace {

using testing::TraceBuilder;
using testing::zero_overheads;

constexpr int kRepetitions = 300;
constexpr std::int64_t kLateBuffer = 1'000'000;  // produced first, consumed by the last op

// Each repetition: compute, an all-reduce whose buffer the compute two repetitions later waits
// for (two in flight), every fifth a wait op joining the last collective. The first all-reduce's
// buffer is consumed only at the end, so its record must outlive every other.
Trace pipeline_rank(int rank, bool with_sequence_numbers) {
  TraceBuilder builder(rank, 2);
  builder.collective(CollectiveKind::kAllReduce, 1 << 20, 40 + 10 * rank, kLateBuffer);
  for (int i = 0; i < kRepetitions; ++i) {
    std::vector<std::int64_t> consumes;
    if (i >= 2)
      consumes.push_back(i - 2);
    builder.op("compute", {rank == 0 ? 30.0 : 55.0 + i % 7}, kDefaultComputeStream, consumes);
    builder.collective(CollectiveKind::kAllReduce, 1 << 20, 20 + (i + rank) % 11, i);
    if (i % 5 == 4)
      builder.wait();
  }
  builder.op("optimizer", {12}, kDefaultComputeStream, {kLateBuffer});
  Trace trace = builder.build();
  if (with_sequence_numbers) {
    std::int64_t seq = 0;
    for (Op& op : trace.ops) {
      if (op.comm)
        op.attributes.push_back({"comm_seq", seq++});
    }
  }
  return trace;
}

struct Traversal {
  std::vector<RankResult> results;
  std::size_t most_records_held = 0;
};

// Advances the two ranks in turn (each until it blocks) and notes the records they hold.
Traversal run(bool with_sequence_numbers) {
  MeasuredKernelDurations kernels;
  MeasuredCommDurations communication;
  const ProgramSources sources{&kernels, &communication, {}};
  std::vector<RankProgram> programs;
  for (int rank = 0; rank < 2; ++rank) {
    programs.push_back(
        build_rank_program(pipeline_rank(rank, with_sequence_numbers), rank, 2, sources));
  }
  const HostOverheads overheads = zero_overheads();
  InProcessClockSync sync;
  std::vector<RankSimulator> simulators;
  for (const RankProgram& program : programs)
    simulators.emplace_back(program, overheads, sync, /*record_timeline=*/true);
  Traversal run;
  for (int round = 0; !simulators[0].finished() || !simulators[1].finished(); ++round) {
    EXPECT_LT(round, 10 * kRepetitions) << "no progress";
    if (round >= 10 * kRepetitions)
      break;
    for (RankSimulator& simulator : simulators) {
      simulator.advance();
      if (!simulator.finished())
        run.most_records_held = std::max(run.most_records_held, simulator.posted_records_held());
    }
  }
  for (RankSimulator& simulator : simulators)
    run.results.push_back(simulator.take_result());
  return run;
}

void expect_same_results(const RankResult& a, const RankResult& b) {
  EXPECT_EQ(a.iteration_us, b.iteration_us);
  EXPECT_EQ(a.cpu_us, b.cpu_us);
  EXPECT_EQ(a.kernel_time_us, b.kernel_time_us);
  EXPECT_EQ(a.gpu_busy_us, b.gpu_busy_us);
  EXPECT_EQ(a.gpu_idle_us, b.gpu_idle_us);
  EXPECT_EQ(a.by_category_us, b.by_category_us);
  EXPECT_EQ(a.ops, b.ops);
  EXPECT_EQ(a.kernels, b.kernels);
  ASSERT_EQ(a.streams.size(), b.streams.size());
  for (std::size_t i = 0; i < a.streams.size(); ++i) {
    EXPECT_EQ(a.streams[i].stream, b.streams[i].stream);
    EXPECT_EQ(a.streams[i].busy_us, b.streams[i].busy_us);
    EXPECT_EQ(a.streams[i].by_category_us, b.streams[i].by_category_us);
  }
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (const auto& [group, traffic] : a.groups) {
    const GroupTraffic& other = b.groups.at(group);
    EXPECT_EQ(traffic.collectives, other.collectives);
    EXPECT_EQ(traffic.time_us, other.time_us);
    EXPECT_EQ(traffic.exposed_us, other.exposed_us);
    EXPECT_EQ(traffic.exposed_before_start_us, other.exposed_before_start_us);
  }
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (std::size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(a.timeline[i].name, b.timeline[i].name);
    EXPECT_EQ(a.timeline[i].start_us, b.timeline[i].start_us);
    EXPECT_EQ(a.timeline[i].duration_us, b.timeline[i].duration_us);
  }
}

TEST(RankSimulatorPostedRecords, FewHeldAndResultsAsWhenAllAreKept) {
  const Traversal dropping = run(false);
  const Traversal keeping = run(true);
  // Every record kept: about one per collective of the program by its end.
  EXPECT_GE(keeping.most_records_held, static_cast<std::size_t>(kRepetitions));
  // Dropped: the collectives in flight (two buffers awaited, the last collective, the late
  // buffer's) and the window's slack until half of it has resolved.
  EXPECT_LE(dropping.most_records_held, 8u);
  ASSERT_EQ(dropping.results.size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    expect_same_results(dropping.results[rank], keeping.results[rank]);
    // The late buffer was waited for: the optimizer ran after the first all-reduce ended.
    EXPECT_GT(dropping.results[rank].groups.at("").collectives, kRepetitions);
  }
}

}  // namespace
}  // namespace perfsim::engine
