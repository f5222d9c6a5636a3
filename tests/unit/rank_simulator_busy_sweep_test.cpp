// A rank's GPU busy time is the union of its kernels' intervals summed in ascending order;
// RankSimulator adds the intervals in stretches as the traversal moves on instead of holding one
// per kernel to the end (rank_simulator.hpp). This checks, on pipelines long enough for many
// stretches, that the sum is bit for bit the one sorting every interval of the timeline at the
// end gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "scenario/llm_simulation.hpp"
#include "support/dgx_a100_scenario.hpp"
#include "support/small_gpt.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

DurationUs busy_sorting_everything(const RankResult& result) {
  std::vector<std::pair<TimestampUs, TimestampUs>> intervals;
  for (const TimelineSlice& slice : result.timeline) {
    if (slice.lane >= 0)
      intervals.emplace_back(slice.start_us, slice.start_us + slice.duration_us);
  }
  std::sort(intervals.begin(), intervals.end());
  DurationUs busy = 0;
  TimestampUs covered_until = 0;
  for (const auto& [start, end] : intervals) {
    const TimestampUs from = std::max(start, covered_until);
    if (end > from)
      busy += end - from;
    covered_until = std::max(covered_until, end);
  }
  return busy;
}

void expect_busy_as_sorted(llm::ParallelConfig parallel) {
  const LlmScenario scenario =
      test_support::dgx_a100_scenario(test_support::small_gpt(8, 512, 256), parallel, 1);
  std::vector<int> ranks(static_cast<std::size_t>(parallel.world_size()));
  for (std::size_t rank = 0; rank < ranks.size(); ++rank)
    ranks[rank] = static_cast<int>(rank);
  const SimulationInputs inputs = load_llm_inputs(scenario, ranks);
  engine::InProcessClockSync sync;
  const std::vector<RankResult> results =
      engine::simulate_programs(inputs.programs, inputs.overheads, sync, true);
  for (const RankResult& result : results) {
    // Far more kernels than one stretch holds (32 at least), so the sum was made in many stretches.
    ASSERT_GT(result.kernels, 3 * 4096) << "rank " << result.sim_rank;
    EXPECT_EQ(result.gpu_busy_us, busy_sorting_everything(result)) << "rank " << result.sim_rank;
    EXPECT_EQ(result.gpu_idle_us, result.iteration_us - result.gpu_busy_us);
  }
}

TEST(RankSimulatorBusySweep, PipelineWithOverlappedGradientReduction) {
  llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = 2;
  parallel.dp = 2;
  parallel.overlap_grad_reduce = true;
  expect_busy_as_sorted(parallel);
}

TEST(RankSimulatorBusySweep, InterleavedPipelineWithOverlappedTensorParallelBackward) {
  llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = 4;
  parallel.virtual_stages = 2;
  parallel.overlap_tp_backward = true;
  expect_busy_as_sorted(parallel);
}

}  // namespace
}  // namespace perfsim::scenario
