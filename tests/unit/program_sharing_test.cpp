// Ranks whose programs differ only in their collectives' groups share one compiled list of ops
// (mpi_sim/engine/program_sharing.hpp). These tests build synthetic ranks (groups of several
// layouts, durations given or priced per group) once in full and once shared, and check that
// every shared rank reads the collectives it compiled, that the ops really are shared, that
// simulating either set gives every result bit for bit, and that a rank whose ops differ keeps
// its own.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "generators/synthetic_workload.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/program_sharing.hpp"
#include "support/same_rank_result.hpp"

namespace perfsim::engine {
namespace {

using generators::GroupLayout;
using generators::SyntheticWorkload;
using test_support::expect_same_result;

// Prices a collective by its group's name (the sum of its characters: groups that differ in
// one digit differ by a few us), so that ranks of different groups get different durations
// and a binding that mixed them up would show.
class PerGroupComm final : public CommDurationSource {
 public:
  DurationUs collective_duration_us(const CollectiveCall& call) const override {
    int characters = 0;
    for (char c : call.group)
      characters += static_cast<unsigned char>(c);
    return 100 + 7.25 * characters;
  }
  DurationCombine combine() const override { return DurationCombine::kLongest; }
  std::string_view name() const override { return "per group (test)"; }
};

SyntheticWorkload workload_of(int ranks, GroupLayout layout, int group_size) {
  SyntheticWorkload workload;
  workload.ranks = ranks;
  workload.repetitions = 5;
  workload.layout = layout;
  workload.group_size = group_size;
  return workload;
}

std::vector<RankProgram> build_all(const SyntheticWorkload& workload, const ProgramSources& sources,
                                   ProgramSharing* sharing) {
  std::vector<RankProgram> programs;
  for (int rank = 0; rank < workload.ranks; ++rank) {
    RankProgram own = build_rank_program(generators::generate_synthetic_rank(workload, rank), rank,
                                         workload.ranks, sources);
    programs.push_back(sharing != nullptr ? sharing->share(std::move(own)) : std::move(own));
  }
  return programs;
}

void expect_shared_like_full(const SyntheticWorkload& workload, const CommDurationSource& comm) {
  const MeasuredKernelDurations kernels;
  const ProgramSources sources{&kernels, &comm, {}};
  const std::vector<RankProgram> full = build_all(workload, sources, nullptr);
  ProgramSharing sharing;
  const std::vector<RankProgram> shared = build_all(workload, sources, &sharing);
  EXPECT_EQ(sharing.shared(), static_cast<std::size_t>(workload.ranks - 1));
  for (int rank = 0; rank < workload.ranks; ++rank) {
    const RankProgram& mine = shared[static_cast<std::size_t>(rank)];
    const RankProgram& own = full[static_cast<std::size_t>(rank)];
    EXPECT_EQ(mine.sim_rank, rank);
    EXPECT_TRUE(mine.ops.shares_with(shared.front().ops)) << "rank " << rank;
    EXPECT_EQ(mine.binding == nullptr, rank == 0) << "rank " << rank;
    ASSERT_EQ(mine.ops.size(), own.ops.size());
    for (std::size_t i = 0; i < own.ops.size(); ++i) {
      if (own.ops[i].collective == nullptr)
        continue;
      const RankCollective a = mine.collective_of(mine.ops[i]);
      const RankCollective b = own.collective_of(own.ops[i]);
      EXPECT_EQ(a.group, b.group) << "rank " << rank << " op " << i;
      EXPECT_EQ(a.members.ranks(), b.members.ranks()) << "rank " << rank << " op " << i;
      EXPECT_EQ(a.index_in_group, b.index_in_group) << "rank " << rank << " op " << i;
      EXPECT_EQ(a.duration_us, b.duration_us) << "rank " << rank << " op " << i;
    }
  }
  InProcessClockSync full_sync;
  const std::vector<RankResult> full_results =
      simulate_programs(full, HostOverheads{}, full_sync, /*record_timeline=*/true);
  InProcessClockSync shared_sync;
  const std::vector<RankResult> shared_results =
      simulate_programs(shared, HostOverheads{}, shared_sync, /*record_timeline=*/true);
  ASSERT_EQ(full_results.size(), shared_results.size());
  for (std::size_t rank = 0; rank < full_results.size(); ++rank)
    expect_same_result(shared_results[rank], full_results[rank]);
}

TEST(ProgramSharing, ConsecutiveGroupsPricedPerGroup) {
  expect_shared_like_full(workload_of(16, GroupLayout::kConsecutive, 4), PerGroupComm{});
}

TEST(ProgramSharing, StridedGroupsPricedPerGroup) {
  expect_shared_like_full(workload_of(16, GroupLayout::kStrided, 4), PerGroupComm{});
}

TEST(ProgramSharing, WorldGroupMeasuredDurations) {
  expect_shared_like_full(workload_of(8, GroupLayout::kWorld, 0), MeasuredCommDurations{});
}

TEST(ProgramSharing, InternsMemberListsAcrossRanks) {
  const MeasuredKernelDurations kernels;
  const MeasuredCommDurations comm;
  const ProgramSources sources{&kernels, &comm, {}};
  ProgramSharing sharing;
  const std::vector<RankProgram> shared =
      build_all(workload_of(8, GroupLayout::kConsecutive, 4), sources, &sharing);
  // Ranks 1 and 2 are in rank 0's group: one list, held once.
  const auto first_collective = [](const RankProgram& program) {
    for (const SimOp& op : program.ops) {
      if (op.collective != nullptr)
        return program.collective_of(op);
    }
    throw std::logic_error("no collective");
  };
  EXPECT_EQ(&first_collective(shared[1]).members.ranks(),
            &first_collective(shared[0]).members.ranks());
  EXPECT_EQ(&first_collective(shared[2]).members.ranks(),
            &first_collective(shared[1]).members.ranks());
  EXPECT_NE(&first_collective(shared[5]).members.ranks(),
            &first_collective(shared[1]).members.ranks());
}

TEST(ProgramSharing, RankWithOtherOpsKeepsItsOwn) {
  const MeasuredKernelDurations kernels;
  const MeasuredCommDurations comm;
  const ProgramSources sources{&kernels, &comm, {}};
  SyntheticWorkload workload = workload_of(4, GroupLayout::kConsecutive, 2);
  ProgramSharing sharing;
  const RankProgram first = sharing.share(
      build_rank_program(generators::generate_synthetic_rank(workload, 0), 0, 4, sources));
  workload.compute_us += 1;  // rank 1's compute kernel takes 1 us longer
  const RankProgram other = sharing.share(
      build_rank_program(generators::generate_synthetic_rank(workload, 1), 1, 4, sources));
  EXPECT_EQ(other.binding, nullptr);
  EXPECT_FALSE(other.ops.shares_with(first.ops));
  EXPECT_FALSE(same_ops_but_groups(first, other));
  EXPECT_EQ(sharing.shared(), 0u);
}

}  // namespace
}  // namespace perfsim::engine
