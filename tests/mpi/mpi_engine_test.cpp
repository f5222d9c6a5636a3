// The MPI clock sync against the in-process one: bit-identical results whatever the process
// layout, and collective mismatches reported on every process without hanging.
#include <gtest/gtest.h>
#include <mpi.h>

#include <optional>

#include "generators/synthetic_workload.hpp"
#include "io/input_file.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "mpi_sim/mpi/distributed_run.hpp"
#include "scenario/llm_simulation.hpp"
#include "scenario/simulation_inputs.hpp"
#include "support/small_gpt.hpp"
#include "support/trace_builder.hpp"
#include "topology/node_resize.hpp"

namespace perfsim {
namespace {

int mpi_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
int mpi_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

using TraceFactory = std::function<Trace(int rank)>;

const engine::MeasuredKernelDurations kKernels;
const engine::MeasuredCommDurations kComm;

std::vector<RankResult> run_in_process(int world_size, const TraceFactory& make) {
  std::vector<engine::RankProgram> programs;
  for (int rank = 0; rank < world_size; ++rank) {
    programs.push_back(
        engine::build_rank_program(make(rank), rank, world_size, {&kKernels, &kComm, {}}));
  }
  engine::InProcessClockSync sync;
  std::vector<engine::RankSimulator> simulators;
  const HostOverheads overheads;
  for (const auto& program : programs)
    simulators.emplace_back(program, overheads, sync);
  engine::run_to_completion(simulators, sync);
  std::vector<RankResult> results;
  for (const auto& simulator : simulators)
    results.push_back(simulator.result());
  return results;
}

std::vector<RankResult> run_mpi(int world_size, int ranks_per_process, const TraceFactory& make,
                                std::optional<mpi::WaitMode> wait_mode = std::nullopt) {
  const std::vector<int> placement = mpi::block_placement(world_size, ranks_per_process);
  std::vector<engine::RankProgram> programs;
  for (int rank = 0; rank < world_size; ++rank) {
    if (placement[rank] != mpi_rank())
      continue;
    programs.push_back(
        engine::build_rank_program(make(rank), rank, world_size, {&kKernels, &kComm, {}}));
  }
  // Matching collectives cost one reduction: nothing is gathered.
  EXPECT_FALSE(mpi::check_collectives(MPI_COMM_WORLD, programs, world_size).details_gathered);
  mpi::DistributedOptions options;
  options.wait_mode = wait_mode;
  return mpi::run_distributed(MPI_COMM_WORLD, programs, placement, HostOverheads{}, options);
}

void expect_identical(const std::vector<RankResult>& expected,
                      const std::vector<RankResult>& actual) {
  if (mpi_rank() != 0) {
    EXPECT_TRUE(actual.empty());
    return;
  }
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    // Bit-identical, not approximately equal.
    EXPECT_EQ(expected[i].iteration_us, actual[i].iteration_us) << "rank " << i;
    EXPECT_EQ(expected[i].cpu_us, actual[i].cpu_us) << "rank " << i;
    EXPECT_EQ(expected[i].gpu_busy_us, actual[i].gpu_busy_us) << "rank " << i;
    EXPECT_EQ(expected[i].by_category_us, actual[i].by_category_us) << "rank " << i;
    ASSERT_EQ(expected[i].groups.size(), actual[i].groups.size());
    for (const auto& [name, traffic] : expected[i].groups) {
      EXPECT_EQ(traffic.exposed_us, actual[i].groups.at(name).exposed_us) << name;
      EXPECT_EQ(traffic.time_us, actual[i].groups.at(name).time_us) << name;
    }
  }
}

// Ranks with different compute times and two group layouts, so collectives really wait.
TraceFactory skewed_synthetic(int world_size, generators::GroupLayout layout, int group_size) {
  return [=](int rank) {
    generators::SyntheticWorkload workload;
    workload.ranks = world_size;
    workload.repetitions = 6;
    workload.compute_us = 100 + 37 * rank;
    workload.collective_bytes = 1 << 20;
    workload.layout = layout;
    workload.group_size = group_size;
    return generators::generate_synthetic_rank(workload, rank);
  };
}

TEST(MpiEngine, OneRankPerProcessMatchesInProcess) {
  const int world = mpi_size();
  auto make = skewed_synthetic(world, generators::GroupLayout::kWorld, 0);
  expect_identical(run_in_process(world, make), run_mpi(world, 1, make));
}

TEST(MpiEngine, SeveralRanksPerProcessMatchInProcess) {
  const int world = 4 * mpi_size();
  for (auto layout : {generators::GroupLayout::kConsecutive, generators::GroupLayout::kStrided}) {
    auto make = skewed_synthetic(world, layout, 2);
    const auto expected = run_in_process(world, make);
    expect_identical(expected, run_mpi(world, 4, make));
    // The same ranks spread differently: layout must not change a single bit.
    if (mpi_size() > 1)
      expect_identical(expected, run_mpi(world, 8, make));
  }
}

// Blocking in MPI_Waitsome and polling between sleeps resolve the same collectives.
TEST(MpiEngine, BothWaitModesMatchInProcess) {
  const int world = 2 * mpi_size();
  auto make = skewed_synthetic(world, generators::GroupLayout::kStrided, 2);
  const auto expected = run_in_process(world, make);
  for (auto mode : {mpi::WaitMode::kBlock, mpi::WaitMode::kYieldCore})
    expect_identical(expected, run_mpi(world, 2, make, mode));
}

TEST(MpiEngine, HandBuiltTwoRankTraceMatchesHandClocks) {
  // The trace of the unit test InterAndIntraRankSynchronizationByHand, now across processes:
  // all-reduce ready at 100 and 300, min duration 50 -> ends at 350; D at [350, 360]
  // (default overheads: T1..T5 zero, +1 us kernel gap; see the expected values below).
  auto make = [](int rank) {
    testing::TraceBuilder builder(rank, 2);
    builder.op("compute", {rank == 0 ? 100.0 : 300.0})
        .collective(CollectiveKind::kAllReduce, 4096, rank == 0 ? 70.0 : 50.0, 42);
    if (rank == 0)
      builder.op("E", {40});
    builder.op("D", {10}, kDefaultComputeStream, {42});
    return builder.build();
  };
  const auto expected = run_in_process(2, make);
  // The default launch parameters add a 1 us gap before every kernel on a stream:
  // compute [1, 101] / [1, 301]; all-reduce ready max(0+1, 0, 101) = 101 and 301 -> [301, 351];
  // D waits for 351 and starts 1 us after the stream is free: [352, 362].
  EXPECT_DOUBLE_EQ(expected[0].iteration_us, 362);
  EXPECT_DOUBLE_EQ(expected[1].iteration_us, 362);
  expect_identical(expected, run_mpi(2, mpi_size() >= 2 ? 1 : 2, make));
}

TEST(MpiEngine, MismatchIsReportedOnEveryProcess) {
  const int world = 2 * mpi_size();
  auto make = [world](int rank) {
    testing::TraceBuilder builder(rank, world);
    builder.collective(CollectiveKind::kAllReduce, 1024, 5);
    // The last rank runs a different size at index 1.
    builder.collective(CollectiveKind::kAllReduce, rank == world - 1 ? 2048 : 1024, 5);
    return builder.build();
  };
  try {
    run_mpi(world, 2, make);
    FAIL() << "expected a collective mismatch";
  } catch (const mpi::AllRanksError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("collective mismatch in process group 'world' at index 1"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("rank " + std::to_string(world - 1) + " runs all_reduce of 2048 bytes"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("rank 0 runs all_reduce of 1024 bytes"), std::string::npos) << message;
  }
}

// The real DLRM fixture: MPI across processes gives the same numbers as in-process.
TEST(MpiEngine, DlrmFixtureMatchesInProcess) {
  const int world = 8;
  scenario::SimulateOptions options;
  options.kineto_specs = {std::string(PERFSIM_SHARED_DATA_DIR) +
                          "/traces/param-dlrm-8xV100/dlrm_kineto.tar.gz"};
  std::vector<RankResult> expected;
  if (mpi_rank() == 0) {
    scenario::SimulationInputs all =
        scenario::load_simulation_inputs(options, world, {0, 1, 2, 3, 4, 5, 6, 7});
    engine::InProcessClockSync sync;
    std::vector<engine::RankSimulator> simulators;
    for (const auto& program : all.programs)
      simulators.emplace_back(program, all.overheads, sync);
    engine::run_to_completion(simulators, sync);
    for (const auto& simulator : simulators)
      expected.push_back(simulator.result());
  }
  const int per_process = (world + mpi_size() - 1) / mpi_size();
  const std::vector<int> placement = mpi::block_placement(world, per_process);
  const std::vector<int> local = mpi::ranks_placed_on(placement, mpi_rank());
  scenario::SimulationInputs inputs = scenario::load_simulation_inputs(options, world, local);
  mpi::check_collectives(MPI_COMM_WORLD, inputs.programs, world);
  auto actual =
      mpi::run_distributed(MPI_COMM_WORLD, inputs.programs, placement, inputs.overheads, {});
  expect_identical(expected, actual);
}

// Link sharing (mpi_sim/engine/link_occupancy.hpp) decides each rank's posted duration from
// that rank alone: a generated LLM run with DP reduce-scatters overlapping pipeline transfers on
// the same NICs gives the in-process bits under MPI.
TEST(MpiEngine, LinkSharingLlmRunMatchesInProcess) {
  generators::llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = 2;
  parallel.dp = 2;
  parallel.overlap_grad_reduce = true;
  parallel.zero_stage = 1;
  const std::string source = PERFSIM_SOURCE_DIR;
  const std::string device = source + "/configs/devices/H100-SXM.json";
  const scenario::LlmScenario scenario{
      test_support::small_gpt(4, 512, 8), parallel,
      // Two GPUs per node: data-parallel and pipeline groups both on the NICs.
      topology::resized(topology::load_topology(source + "/configs/topologies/hgx-h100.json"), 4,
                        2),
      io::read_file_decompressed(device), device, ""};
  ASSERT_TRUE(scenario.link_sharing);
  const int world = parallel.world_size();
  std::vector<RankResult> expected;
  if (mpi_rank() == 0) {
    const scenario::SimulationInputs all =
        scenario::load_llm_inputs(scenario, {0, 1, 2, 3, 4, 5, 6, 7});
    engine::InProcessClockSync sync;
    expected = engine::simulate_programs(all.programs, all.overheads, sync);
  }
  const int per_process = (world + mpi_size() - 1) / mpi_size();
  const std::vector<int> placement = mpi::block_placement(world, per_process);
  const std::vector<int> local = mpi::ranks_placed_on(placement, mpi_rank());
  const scenario::SimulationInputs inputs = scenario::load_llm_inputs(scenario, local);
  expect_identical(expected, mpi::run_distributed(MPI_COMM_WORLD, inputs.programs, placement,
                                                  inputs.overheads, {}));
}

// Two interleaved stages (PP 2 x VP 2): each direction of the one rank pair carries two message
// streams (activations, gradients), each on a communicator of its own; the reductions resolve
// as in one process whatever the placement.
TEST(MpiEngine, TwoStageInterleavedLlmRunMatchesInProcess) {
  generators::llm::ParallelConfig parallel;
  parallel.tp = 1;
  parallel.pp = 2;
  parallel.dp = 2;
  parallel.virtual_stages = 2;
  const std::string source = PERFSIM_SOURCE_DIR;
  const std::string device = source + "/configs/devices/H100-SXM.json";
  const scenario::LlmScenario scenario{
      test_support::small_gpt(4, 512, 8),
      parallel,
      topology::load_topology(source + "/configs/topologies/hgx-h100.json"),
      io::read_file_decompressed(device),
      device,
      ""};
  const int world = parallel.world_size();
  std::vector<RankResult> expected;
  if (mpi_rank() == 0) {
    const scenario::SimulationInputs all = scenario::load_llm_inputs(scenario, {0, 1, 2, 3});
    engine::InProcessClockSync sync;
    expected = engine::simulate_programs(all.programs, all.overheads, sync);
  }
  for (int per_process : {1, 2, 4}) {
    if (per_process * mpi_size() < world)
      continue;
    const std::vector<int> placement = mpi::block_placement(world, per_process);
    const std::vector<int> local = mpi::ranks_placed_on(placement, mpi_rank());
    const scenario::SimulationInputs inputs = scenario::load_llm_inputs(scenario, local);
    EXPECT_FALSE(mpi::check_collectives(MPI_COMM_WORLD, inputs.programs, world).details_gathered);
    expect_identical(expected, mpi::run_distributed(MPI_COMM_WORLD, inputs.programs, placement,
                                                    inputs.overheads, {}));
  }
}

}  // namespace
}  // namespace perfsim
