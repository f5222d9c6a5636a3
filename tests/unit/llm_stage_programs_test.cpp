// Unfolded LLM runs compile each pipeline stage's ops once and give the stage's other ranks
// those ops with their own collective roles (scenario/llm_stage_programs.hpp). These tests
// check, on small layouts of every parallelism kind (support/parallelism_layouts.hpp), that every
// rank's bound program is the program compiled from its own trace (each collective's group,
// members, index and duration; the ops themselves are shared), that simulating the bound programs
// gives every rank's result bit for bit, and that the ops really are shared.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "scenario/llm_simulation.hpp"
#include "support/layout_scenario.hpp"
#include "support/llm_programs_in_full.hpp"
#include "support/parallelism_layouts.hpp"
#include "support/same_rank_result.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

using test_support::expect_same_result;
using test_support::tp_pp_dp;

std::vector<int> all_ranks(const llm::ParallelConfig& parallel) {
  std::vector<int> ranks;
  for (int rank = 0; rank < parallel.world_size(); ++rank)
    ranks.push_back(rank);
  return ranks;
}

void expect_same_program(const engine::RankProgram& bound, const engine::RankProgram& full) {
  const std::string rank = "rank " + std::to_string(full.sim_rank);
  EXPECT_EQ(bound.sim_rank, full.sim_rank);
  EXPECT_EQ(bound.source, full.source) << rank;
  EXPECT_EQ(bound.world_size, full.world_size) << rank;
  ASSERT_EQ(bound.ops.size(), full.ops.size()) << rank;
  for (std::size_t i = 0; i < full.ops.size(); ++i) {
    const engine::SimOp& a = bound.ops[i];
    const engine::SimOp& b = full.ops[i];
    ASSERT_EQ(a.name, b.name) << rank << " op " << i;
    ASSERT_EQ(a.kernels.size(), b.kernels.size()) << rank << " op " << i;
    for (std::size_t k = 0; k < b.kernels.size(); ++k) {
      if (!b.kernels[k].is_collective) {
        ASSERT_EQ(a.kernels[k].duration_us, b.kernels[k].duration_us) << rank << " op " << i;
      }
    }
    ASSERT_EQ(a.consumed_tensor_ids, b.consumed_tensor_ids) << rank << " op " << i;
    ASSERT_EQ(a.collective != nullptr, b.collective != nullptr) << rank << " op " << i;
    if (!b.collective)
      continue;
    const engine::RankCollective mine = bound.collective_of(a);
    const engine::SimCollective& expected = *b.collective;
    ASSERT_EQ(mine.group, expected.group) << rank << " op " << i;
    ASSERT_EQ(mine.members, expected.members) << rank << " op " << i;
    ASSERT_EQ(mine.index_in_group, expected.index_in_group) << rank << " op " << i;
    ASSERT_EQ(mine.duration_us, expected.duration_us) << rank << " op " << i;  // exact
    ASSERT_EQ(mine.shared.comm.kind, expected.comm.kind) << rank << " op " << i;
    ASSERT_EQ(mine.shared.comm.bytes_in, expected.comm.bytes_in) << rank << " op " << i;
    ASSERT_EQ(mine.shared.stream, expected.stream) << rank << " op " << i;
    ASSERT_EQ(mine.shared.produced_tensor_ids, expected.produced_tensor_ids) << rank;
    ASSERT_EQ(mine.shared.combine, expected.combine) << rank << " op " << i;
  }
}

// Bound programs equal programs compiled in full, simulate to the same results, and every
// rank of a stage after the first holds no ops of its own.
void expect_bound_like_full(const llm::ParallelConfig& parallel) {
  const LlmScenario scenario = test_support::layout_scenario(parallel);
  const SimulationInputs inputs = load_llm_inputs(scenario, all_ranks(parallel));
  const std::vector<engine::RankProgram> full =
      test_support::llm_programs_in_full(scenario, inputs);
  ASSERT_EQ(inputs.programs.size(), full.size());
  std::set<int> stages_seen;
  for (std::size_t rank = 0; rank < full.size(); ++rank) {
    expect_same_program(inputs.programs[rank], full[rank]);
    const int stage = llm::coordinates_of(parallel, static_cast<int>(rank)).pp;
    const bool first_of_stage = stages_seen.insert(stage).second;
    EXPECT_EQ(inputs.programs[rank].binding == nullptr, first_of_stage) << "rank " << rank;
  }
  engine::InProcessClockSync bound_sync;
  const std::vector<RankResult> bound_results =
      engine::simulate_programs(inputs.programs, inputs.overheads, bound_sync);
  engine::InProcessClockSync full_sync;
  const std::vector<RankResult> full_results =
      engine::simulate_programs(full, inputs.overheads, full_sync);
  ASSERT_EQ(bound_results.size(), full_results.size());
  for (std::size_t rank = 0; rank < full_results.size(); ++rank)
    expect_same_result(bound_results[rank], full_results[rank]);
}

class LlmStageProgramsOfEveryKind : public testing::TestWithParam<test_support::ParallelismLayout> {
};

TEST_P(LlmStageProgramsOfEveryKind, BindLikeProgramsCompiledInFull) {
  expect_bound_like_full(GetParam().parallel);
}

INSTANTIATE_TEST_SUITE_P(LlmStagePrograms, LlmStageProgramsOfEveryKind,
                         testing::ValuesIn(test_support::parallelism_layouts()),
                         [](const auto& info) { return info.param.name; });

TEST(LlmStagePrograms, TensorGroupsStraddlingNodesKeepTheirOwnDurations) {
  // TP 3 on 8-GPU nodes: one TP group crosses into the second node, so its collectives take
  // longer than the compiled rank's; the bound ranks must carry their own durations (this
  // layout does not fold).
  expect_bound_like_full(tp_pp_dp(3, 1, 3));
}

TEST(LlmStagePrograms, LocalRanksInAnyOrderBindToTheirOwnRoles) {
  const llm::ParallelConfig parallel = tp_pp_dp(2, 2, 4);
  const LlmScenario scenario = test_support::layout_scenario(parallel);
  const std::vector<int> local{13, 2, 9, 0, 15};
  const SimulationInputs inputs = load_llm_inputs(scenario, local);
  const std::vector<engine::RankProgram> full =
      test_support::llm_programs_in_full(scenario, inputs);
  ASSERT_EQ(inputs.programs.size(), local.size());
  for (std::size_t i = 0; i < local.size(); ++i)
    expect_same_program(inputs.programs[i], full[static_cast<std::size_t>(local[i])]);
  // 13, 9 and 15 are in one stage: one list of ops between them.
  const int stage_of_13 = llm::coordinates_of(parallel, 13).pp;
  ASSERT_EQ(llm::coordinates_of(parallel, 9).pp, stage_of_13);
  ASSERT_EQ(llm::coordinates_of(parallel, 15).pp, stage_of_13);
  EXPECT_TRUE(inputs.programs[0].ops.shares_with(inputs.programs[2].ops));
  EXPECT_TRUE(inputs.programs[0].ops.shares_with(inputs.programs[4].ops));
  EXPECT_FALSE(inputs.programs[0].ops.shares_with(inputs.programs[1].ops));
}

}  // namespace
}  // namespace perfsim::scenario
