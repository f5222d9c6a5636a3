#pragma once
// Every rank of an LLM scenario simulated in one process, unfolded: the reference a folded or
// link-sharing run is compared with.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "scenario/folded_simulation.hpp"
#include "scenario/llm_simulation.hpp"
#include "support/same_rank_result.hpp"

namespace perfsim::test_support {

inline std::vector<RankResult> simulate_every_rank(const scenario::LlmScenario& scenario,
                                                   bool record_timeline = false) {
  std::vector<int> ranks(static_cast<std::size_t>(scenario.parallel.world_size()));
  std::iota(ranks.begin(), ranks.end(), 0);
  const scenario::SimulationInputs inputs = scenario::load_llm_inputs(scenario, ranks);
  engine::InProcessClockSync sync;
  return engine::simulate_programs(inputs.programs, inputs.overheads, sync, record_timeline);
}

inline double slowest_iteration_us(const std::vector<RankResult>& results) {
  double slowest = 0;
  for (const RankResult& result : results)
    slowest = std::max(slowest, result.iteration_us);
  return slowest;
}

// The folded run (no timeline) gives every rank the unfolded run's result bit for bit.
inline void expect_fold_matches_every_rank(const scenario::LlmScenario& scenario) {
  const scenario::FoldedRun folded = scenario::fold_in_process(scenario, false);
  ASSERT_FALSE(folded.refusal) << *folded.refusal;
  const std::vector<RankResult> full = simulate_every_rank(scenario);
  ASSERT_EQ(folded.results.size(), full.size());
  for (std::size_t rank = 0; rank < full.size(); ++rank)
    expect_same_result(folded.results[rank], full[rank]);
}

}  // namespace perfsim::test_support
