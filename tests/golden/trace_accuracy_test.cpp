// Issue 18 acceptance on the real-trace fixtures with measured step times (the 8-rank DLRM
// Kineto traces, ../shared/data/traces/param-dlrm-8xV100): a replay with measured durations
// within 3% of every rank's measured step end and of the synchronized iteration; with kernel
// and collective models within 10%. Host time is each op's recorded time (the default for
// Kineto input); the T1..T5-means variant is the README's older figure (-3.41%), kept within
// the 5% the DLRM replay test has always held it to. All in-sample: the same traces give the
// host times and the step ends (nothing is fitted to them). tools/trace_accuracy.sh prints the
// same table for every Kineto trace set under ../shared/data/traces.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "scenario/simulation_inputs.hpp"

namespace perfsim {
namespace {

const std::string kKinetoArchive =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-dlrm-8xV100/dlrm_kineto.tar.gz";

struct Errors {
  double synchronized = 0;
  double worst_rank = 0;
};

Errors replay(const scenario::SimulateOptions& options, const std::string& label) {
  scenario::SimulationInputs inputs =
      scenario::load_simulation_inputs(options, 8, {0, 1, 2, 3, 4, 5, 6, 7});
  engine::InProcessClockSync sync;
  std::vector<engine::RankSimulator> simulators;
  for (const auto& program : inputs.programs)
    simulators.emplace_back(program, inputs.overheads, sync);
  engine::run_to_completion(simulators, sync);
  Errors errors;
  double measured_last = 0, predicted_last = 0;
  for (const auto& step : inputs.measured_steps) {
    const double predicted =
        simulators.at(static_cast<std::size_t>(step.rank)).result().iteration_us;
    const double error = (predicted - step.end_us) / step.end_us;
    std::cout << label << " rank " << step.rank << ": measured " << step.end_us << " us, predicted "
              << predicted << " us, error " << 100 * error << "%\n";
    errors.worst_rank = std::max(errors.worst_rank, std::abs(error));
    measured_last = std::max(measured_last, step.end_us);
    predicted_last = std::max(predicted_last, predicted);
  }
  errors.synchronized = (predicted_last - measured_last) / measured_last;
  std::cout << label << " synchronized: measured " << measured_last << " us, predicted "
            << predicted_last << " us, error " << 100 * errors.synchronized << "%\n";
  return errors;
}

TEST(TraceAccuracy, MeasuredReplayWithinThreePercentOnEveryRank) {
  scenario::SimulateOptions options;
  options.kineto_specs = {kKinetoArchive};
  const Errors errors = replay(options, "measured");
  EXPECT_LT(std::abs(errors.synchronized), 0.03);
  EXPECT_LT(errors.worst_rank, 0.03);
}

TEST(TraceAccuracy, ModelDurationsWithinTenPercentOnEveryRank) {
  scenario::SimulateOptions options;
  options.kineto_specs = {kKinetoArchive};
  options.kernel_durations = "model";
  options.comm_durations = "model";
  options.llm.topology_path =
      std::string(PERFSIM_SOURCE_DIR) + "/configs/topologies/dgx1-v100.json";
  const Errors errors = replay(options, "model");
  EXPECT_LT(std::abs(errors.synchronized), 0.10);
  EXPECT_LT(errors.worst_rank, 0.10);
}

TEST(TraceAccuracy, OverheadMeansReplayKeepsItsReadmeFigure) {
  scenario::SimulateOptions options;
  options.kineto_specs = {kKinetoArchive};
  options.host_timing = "overheads";
  const Errors errors = replay(options, "overhead means");
  EXPECT_LT(std::abs(errors.synchronized), 0.05);
}

}  // namespace
}  // namespace perfsim
