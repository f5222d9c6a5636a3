// A clock sync holds a collective's record only while the collective is in flight: once every
// member of this process that posted it has taken its timing, the record is freed
// (mpi_sim/engine/local_collective_table.hpp), so a run holds the collectives outstanding rather
// than every collective it resolved.
#include <gtest/gtest.h>

#include <vector>

#include "generators/synthetic_workload.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_collective_table.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "perfsim/error.hpp"

namespace perfsim::engine {
namespace {

const std::vector<int> kPair = {0, 1};

CollectivePost post_of(int rank, TimestampUs ready_us, DurationUs duration_us) {
  CollectivePost post;
  post.sim_rank = rank;
  post.group = "tp";
  post.index_in_group = 0;
  post.members = kPair;
  post.ready_us = ready_us;
  post.duration_us = duration_us;
  return post;
}

TEST(CollectiveRecordFreeing, FreedWhenEveryLocalMemberTookTheTiming) {
  LocalCollectiveTable table([](int) { return true; });
  const auto [handle, complete_after_first] = table.add(post_of(0, 10, 5));
  EXPECT_FALSE(complete_after_first);
  EXPECT_FALSE(table.take_timing(handle).has_value());  // unresolved: nothing taken
  const auto [same, complete] = table.add(post_of(1, 12, 7));
  EXPECT_EQ(same, handle);
  EXPECT_TRUE(complete);
  table.at(handle).timing = CollectiveTiming{12, 19};
  EXPECT_EQ(table.size(), 1u);
  ASSERT_TRUE(table.take_timing(handle).has_value());
  EXPECT_EQ(table.size(), 1u);  // rank 1 has not taken it yet
  const std::optional<CollectiveTiming> last = table.take_timing(handle);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->start_us, 12);
  EXPECT_EQ(last->end_us, 19);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_THROW(table.at(handle), RuntimeFailure);
  // The next collective of the group gets a new handle: a scheduler's stale handle cannot name it.
  CollectivePost next = post_of(0, 30, 5);
  next.index_in_group = 1;
  EXPECT_NE(table.add(next).first, handle);
  EXPECT_EQ(table.posted_collectives(), 2u);
}

TEST(CollectiveRecordFreeing, OnlyLocalMembersAreAwaited) {
  // Rank 1 lives in another process: rank 0's taking the timing frees the record.
  LocalCollectiveTable table([](int rank) { return rank == 0; });
  const auto [handle, complete] = table.add(post_of(0, 10, 5));
  EXPECT_TRUE(complete);
  table.at(handle).timing = CollectiveTiming{11, 16};
  ASSERT_TRUE(table.take_timing(handle).has_value());
  EXPECT_EQ(table.size(), 0u);
}

TEST(CollectiveRecordFreeing, InProcessRunEndsHoldingNoRecord) {
  generators::SyntheticWorkload workload;
  workload.ranks = 8;
  workload.repetitions = 20;
  workload.layout = generators::GroupLayout::kConsecutive;
  workload.group_size = 4;
  const MeasuredKernelDurations kernels;
  const MeasuredCommDurations comm;
  const ProgramSources sources{&kernels, &comm, {}};
  std::vector<RankProgram> programs;
  for (int rank = 0; rank < workload.ranks; ++rank) {
    programs.push_back(build_rank_program(generators::generate_synthetic_rank(workload, rank), rank,
                                          workload.ranks, sources));
  }
  InProcessClockSync sync;
  const std::vector<RankResult> results = simulate_programs(programs, HostOverheads{}, sync);
  ASSERT_EQ(results.size(), 8u);
  EXPECT_EQ(sync.table().posted_collectives(), 2u * 20u);  // two groups, 20 each
  EXPECT_EQ(sync.table().size(), 0u);
  // Each collective starts when its last member is ready and every rank sees the same end.
  for (const RankResult& result : results)
    EXPECT_EQ(result.iteration_us, results.front().iteration_us);
}

TEST(CollectiveRecordFreeing, UnsynchronizedTimingTakenOnce) {
  UnsynchronizedClockSync sync;
  const CollectiveHandle handle = sync.post(post_of(0, 10, 5));
  const std::optional<CollectiveTiming> timing = sync.poll(handle);
  ASSERT_TRUE(timing.has_value());
  EXPECT_EQ(timing->end_us, 15);
  EXPECT_THROW(sync.poll(handle), RuntimeFailure);
}

}  // namespace
}  // namespace perfsim::engine
