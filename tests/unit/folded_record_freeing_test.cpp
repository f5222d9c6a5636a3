// FoldedClockSync frees what it holds for a collective once it is resolved, as the other clock
// syncs do (clock_sync.hpp): the record once every representative in the group took the
// timing, each post once every collective awaiting it resolved. A folded run of every
// parallelism kind therefore ends holding nothing, and gives the timings it gave before
// (folded_simulation_test compares them with the full simulation bit for bit).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mpi_sim/engine/folded_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "perfsim/error.hpp"
#include "scenario/folded_simulation.hpp"
#include "support/layout_scenario.hpp"
#include "support/parallelism_layouts.hpp"
#include "support/same_rank_result.hpp"

namespace perfsim::scenario {
namespace {

class FoldedRecordFreeing : public testing::TestWithParam<test_support::ParallelismLayout> {};

TEST_P(FoldedRecordFreeing, RunEndsHoldingNoRecordAndNoPost) {
  const LlmScenario scenario = test_support::layout_scenario(GetParam().parallel);
  const std::vector<int> representative_of = stage_representative_of(scenario.parallel);
  const FoldInputs fold = load_fold_inputs(scenario);
  std::vector<int> all(representative_of.size());
  for (std::size_t rank = 0; rank < all.size(); ++rank)
    all[rank] = static_cast<int>(rank);
  const FoldProof proof = prove_ranks(scenario, fold, representative_of, all);
  ASSERT_FALSE(fold_refusal(proof, representative_of));
  engine::FoldedClockSync sync(representative_of, proof.renamings);
  const std::vector<RankResult> results =
      engine::simulate_programs(fold.inputs.programs, fold.inputs.overheads, sync, false);
  std::size_t collectives = 0;
  for (const engine::RankProgram& program : fold.inputs.programs)
    collectives += program.coverage.collectives;
  ASSERT_GT(collectives, 0u);
  EXPECT_EQ(sync.held_collectives(), 0u);
  EXPECT_EQ(sync.held_posts(), 0u);
  // The freed records gave the timings the run gives when posts are kept to the end (they are
  // when a representative's renaming is missing).
  std::vector<engine::GroupRenaming> without_rank_0;
  for (const engine::GroupRenaming& renaming : proof.renamings) {
    if (renaming.rank != 0)
      without_rank_0.push_back(renaming);
  }
  engine::FoldedClockSync keeping(representative_of, without_rank_0);
  const std::vector<RankResult> kept =
      engine::simulate_programs(fold.inputs.programs, fold.inputs.overheads, keeping, false);
  EXPECT_GT(keeping.held_posts(), 0u);
  ASSERT_EQ(results.size(), kept.size());
  for (std::size_t i = 0; i < results.size(); ++i)
    test_support::expect_same_result(results[i], kept[i]);
}

INSTANTIATE_TEST_SUITE_P(FoldedRecordFreeing, FoldedRecordFreeing,
                         testing::ValuesIn(test_support::parallelism_layouts()),
                         [](const auto& info) { return info.param.name; });

TEST(FoldedRecordFreeing, PollAfterEveryRepresentativeTookTheTimingIsAnError) {
  // Two representatives, each its own class: a collective of both is freed after both polls.
  engine::FoldedClockSync sync({0, 1}, {});
  const std::vector<int> members = {0, 1};
  engine::CollectivePost post;
  post.group = "tp";
  post.members = members;
  post.ready_us = 10;
  post.duration_us = 5;
  const engine::CollectiveHandle handle = sync.post(post);
  EXPECT_FALSE(sync.poll(handle).has_value());  // rank 1 has not posted: nothing taken
  post.sim_rank = 1;
  post.ready_us = 12;
  EXPECT_EQ(sync.post(post), handle);
  EXPECT_EQ(sync.poll(handle)->start_us, 12);
  EXPECT_EQ(sync.held_collectives(), 1u);  // rank 1 has not taken it yet
  EXPECT_EQ(sync.poll(handle)->end_us, 17);
  EXPECT_EQ(sync.held_collectives(), 0u);
  EXPECT_EQ(sync.held_posts(), 2u);  // without renamings the posts' awaiters are unknown: kept
  EXPECT_THROW(sync.poll(handle), RuntimeFailure);
}

}  // namespace
}  // namespace perfsim::scenario
