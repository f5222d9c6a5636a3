// The ready-queue scheduler: a rank that waits for a collective is parked until the collective
// resolves, never re-advanced to find out, and the order in which ranks run changes no result.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "support/trace_builder.hpp"

namespace perfsim::engine {
namespace {

using testing::TraceBuilder;
using testing::zero_overheads;

// Counts how often ranks ask whether a collective has resolved.
class CountingClockSync final : public ClockSync {
 public:
  CollectiveHandle post(const CollectivePost& post) override {
    ++posts;
    return inner_.post(post);
  }
  std::optional<CollectiveTiming> poll(CollectiveHandle handle) override {
    ++polls;
    return inner_.poll(handle);
  }
  bool make_progress() override { return inner_.make_progress(); }
  void take_resolved(std::vector<CollectiveHandle>& into) override { inner_.take_resolved(into); }
  std::size_t posts = 0;
  std::size_t polls = 0;

 private:
  InProcessClockSync inner_;
};

std::string link(int lower) {
  return "link" + std::to_string(lower);
}

// Rank i all-reduces with rank i+1 on link i, waits, then with rank i-1 on link i-1, waits:
// only the last link can start at once and each link resolves the one below it, so the
// collectives resolve one after the other from the top rank down, the opposite of rank order.
Trace chain_rank(int rank, int ranks) {
  TraceBuilder builder(rank, ranks);
  if (rank + 1 < ranks) {
    builder.group(link(rank), {rank, rank + 1});
    builder.collective(CollectiveKind::kAllReduce, 64, 10, -1, link(rank)).wait();
  }
  if (rank > 0) {
    builder.group(link(rank - 1), {rank - 1, rank});
    builder.collective(CollectiveKind::kAllReduce, 64, 10, -1, link(rank - 1)).wait();
  }
  return builder.build();
}

struct ChainRun {
  std::vector<RankResult> results;  // in rank order
  std::size_t posts = 0;
  std::size_t polls = 0;
};

// `order` lists the ranks in the order the scheduler receives them.
ChainRun run_chain(int ranks, const std::vector<int>& order) {
  const MeasuredKernelDurations kernels;
  const MeasuredCommDurations communication;
  std::vector<RankProgram> programs;
  for (int rank : order) {
    programs.push_back(
        build_rank_program(chain_rank(rank, ranks), rank, ranks, {&kernels, &communication, {}}));
  }
  CountingClockSync sync;
  const HostOverheads overheads = zero_overheads();
  std::vector<RankSimulator> simulators;
  for (const RankProgram& program : programs)
    simulators.emplace_back(program, overheads, sync);
  run_to_completion(simulators, sync);
  ChainRun run;
  run.results.resize(static_cast<std::size_t>(ranks));
  for (const RankSimulator& simulator : simulators) {
    RankResult result = simulator.result();
    run.results[static_cast<std::size_t>(result.sim_rank)] = std::move(result);
  }
  run.posts = sync.posts;
  run.polls = sync.polls;
  return run;
}

TEST(LocalScheduler, ChainResolvesAsComputedByHand) {
  const int ranks = 64;
  std::vector<int> order(ranks);
  for (int rank = 0; rank < ranks; ++rank)
    order[static_cast<std::size_t>(rank)] = rank;
  const ChainRun run = run_chain(ranks, order);
  // Link j runs [10 (ranks - 2 - j), 10 (ranks - 1 - j)]; rank i > 0 ends with link i - 1, rank
  // 0 with link 0.
  EXPECT_DOUBLE_EQ(run.results[0].iteration_us, 10.0 * (ranks - 1));
  for (int rank = 1; rank < ranks; ++rank)
    EXPECT_DOUBLE_EQ(run.results[static_cast<std::size_t>(rank)].iteration_us,
                     10.0 * (ranks - rank))
        << "rank " << rank;
}

TEST(LocalScheduler, ParkedRanksAreNotReadvanced) {
  // Re-advancing every blocked rank in rounds takes one round per link here (the round-robin
  // scheduler polled 8,509 times for 128 ranks); parking asks at most three times per post: when
  // posted, when a rank needs it, and once woken.
  const int ranks = 128;
  std::vector<int> order(ranks);
  for (int rank = 0; rank < ranks; ++rank)
    order[static_cast<std::size_t>(rank)] = rank;
  const ChainRun run = run_chain(ranks, order);
  EXPECT_EQ(run.posts, 2u * (ranks - 1));
  EXPECT_LE(run.polls, 3 * run.posts);
}

TEST(LocalScheduler, OrderOfRanksChangesNoBit) {
  const int ranks = 32;
  std::vector<int> forward(ranks);
  for (int rank = 0; rank < ranks; ++rank)
    forward[static_cast<std::size_t>(rank)] = rank;
  std::vector<int> shuffled = forward;
  std::reverse(shuffled.begin(), shuffled.end());
  std::rotate(shuffled.begin(), shuffled.begin() + 7, shuffled.end());
  const ChainRun a = run_chain(ranks, forward);
  const ChainRun b = run_chain(ranks, shuffled);
  for (std::size_t rank = 0; rank < a.results.size(); ++rank) {
    EXPECT_EQ(a.results[rank].iteration_us, b.results[rank].iteration_us) << rank;
    EXPECT_EQ(a.results[rank].kernel_time_us, b.results[rank].kernel_time_us) << rank;
    EXPECT_EQ(a.results[rank].by_category_us, b.results[rank].by_category_us) << rank;
  }
}

}  // namespace
}  // namespace perfsim::engine
