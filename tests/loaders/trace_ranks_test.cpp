// Rank identity comes from trace metadata (Kineto distributedInfo, execution-trace rank), not
// from the order or number of the files given: --single-rank R picks the trace that is rank R,
// a single-rank run reports times from its own step start, and part of a job is an error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "perfsim/error.hpp"
#include "scenario/simulation_inputs.hpp"
#include "trace_io/trace_ranks.hpp"

namespace perfsim {
namespace {

const std::string kData = std::string(PERFSIM_TEST_DATA_DIR) + "/kineto/";
const std::string kDlrm =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-dlrm-8xV100/dlrm_kineto.tar.gz";

std::string dlrm_member(int rank) {
  static const char* const kMembers[] = {
      "worker0_step_12.1694128201545.pt.trace.json", "worker1_step_12.1694128201556.pt.trace.json",
      "worker2_step_12.1694128201554.pt.trace.json", "worker3_step_12.1694128201557.pt.trace.json",
      "worker4_step_12.1694128201547.pt.trace.json", "worker5_step_12.1694128201549.pt.trace.json",
      "worker6_step_12.1694128201553.pt.trace.json", "worker7_step_12.1694128201553.pt.trace.json"};
  return kDlrm + ":dlrm_kineto/" + kMembers[rank];
}

RankResult run_single(const scenario::SimulateOptions& options,
                      scenario::SimulationInputs& inputs) {
  engine::UnsynchronizedClockSync sync;
  std::vector<engine::RankSimulator> simulators;
  simulators.emplace_back(inputs.programs.front(), inputs.overheads, sync);
  engine::run_to_completion(simulators, sync);
  (void)options;
  return simulators.front().result();
}

std::string error_of(const scenario::SimulateOptions& options) {
  try {
    scenario::simulated_world_size(options, 1);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(TraceRanks, SingleRankSelectsTheTraceWhoseMetadataRankMatches) {
  scenario::SimulateOptions options;
  options.kineto_specs = {kData + "job2_rank1.json"};
  options.single_rank = 1;
  scenario::SimulationInputs inputs =
      scenario::load_simulation_inputs(options, scenario::simulated_world_size(options, 1), {1});
  ASSERT_EQ(inputs.programs.size(), 1u);
  EXPECT_EQ(inputs.programs.front().sim_rank, 1);
  EXPECT_EQ(inputs.programs.front().world_size, 2);
  ASSERT_EQ(inputs.measured_steps.size(), 1u);
  EXPECT_EQ(inputs.measured_steps.front().rank, 1);
  EXPECT_EQ(inputs.measured_steps.front().start_us, 0);
  EXPECT_EQ(inputs.measured_steps.front().end_us, 1000);
  const RankResult result = run_single(options, inputs);
  // From the step start: the GEMM, elementwise kernels and three all-reduces end well within
  // a few step lengths, never near the epoch timestamp 1e6 us of the file.
  EXPECT_GT(result.iteration_us, 300);
  EXPECT_LT(result.iteration_us, 3000);
}

TEST(TraceRanks, SingleRankAbsentFromTheTracesIsAnErrorNamingThePresentRanks) {
  scenario::SimulateOptions options;
  options.kineto_specs = {kData + "job2_rank1.json"};
  options.single_rank = 0;  // the file's position, but not its rank
  const std::string error = error_of(options);
  EXPECT_NE(error.find("no trace is rank 0"), std::string::npos) << error;
  EXPECT_NE(error.find("rank(s) 1"), std::string::npos) << error;
}

TEST(TraceRanks, PartOfAJobIsAnErrorNamingTheMissingRanks) {
  scenario::SimulateOptions options;
  options.kineto_specs = {kData + "job2_rank1.json"};
  const std::string error = error_of(options);
  EXPECT_NE(error.find("job of 2 ranks"), std::string::npos) << error;
  EXPECT_NE(error.find("missing rank(s) 0"), std::string::npos) << error;
  EXPECT_NE(error.find("--single-rank"), std::string::npos) << error;
}

TEST(TraceRanks, FilesGivenOutOfOrderAreOrderedByMetadataRank) {
  scenario::SimulateOptions options;
  options.kineto_specs = {kData + "job2_rank1.json", kData + "job2_rank0.json"};
  EXPECT_EQ(scenario::simulated_world_size(options, 1), 2);
  scenario::SimulationInputs inputs = scenario::load_simulation_inputs(options, 2, {0, 1});
  ASSERT_EQ(inputs.programs.size(), 2u);
  EXPECT_NE(inputs.programs[0].source.find("job2_rank0"), std::string::npos);
  EXPECT_NE(inputs.programs[1].source.find("job2_rank1"), std::string::npos);
}

TEST(TraceRanks, TwoTracesClaimingOneRankAreAnError) {
  scenario::SimulateOptions options;
  options.kineto_specs = {kData + "job2_rank1.json", kData + "job2_rank1.json"};
  EXPECT_NE(error_of(options).find("also claims"), std::string::npos);
}

TEST(TraceRanks, HalfOfTheDlrmFixtureIsAnError) {
  scenario::SimulateOptions options;
  for (int rank = 0; rank < 4; ++rank)
    options.kineto_specs.push_back(dlrm_member(rank));
  const std::string error = error_of(options);
  EXPECT_NE(error.find("job of 8 ranks"), std::string::npos) << error;
  EXPECT_NE(error.find("missing rank(s) 4-7"), std::string::npos) << error;
}

// The report: rank 3's file alone with --single-rank 3 must simulate rank 3 and report
// its iteration from its own ProfilerStep start (19313 us measured), not an epoch timestamp.
TEST(TraceRanks, DlrmRankThreeAloneReportsFromItsStepStart) {
  scenario::SimulateOptions options;
  options.kineto_specs = {dlrm_member(3)};
  options.single_rank = 3;
  EXPECT_EQ(scenario::simulated_world_size(options, 1), 8);
  scenario::SimulationInputs inputs = scenario::load_simulation_inputs(options, 8, {3});
  ASSERT_EQ(inputs.measured_steps.size(), 1u);
  EXPECT_EQ(inputs.measured_steps.front().start_us, 0);
  EXPECT_EQ(inputs.measured_steps.front().end_us, 19313);
  const RankResult result = run_single(options, inputs);
  std::cout << "rank 3 alone: predicted " << result.iteration_us << " us, measured 19313 us\n";
  EXPECT_GT(result.iteration_us, 0.5 * 19313);
  EXPECT_LT(result.iteration_us, 1.5 * 19313);
}

TEST(TraceRanks, RankListsAreWrittenAsRanges) {
  EXPECT_EQ(trace_io::format_rank_list({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(trace_io::format_rank_list({}), "none");
}

}  // namespace
}  // namespace perfsim
