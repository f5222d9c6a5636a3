#pragma once
// Every rank of a layout generated, compiled with the given duration sources and run through
// the engine in one process: the slowest rank's iteration, the number a schedule test compares.
#include <algorithm>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"

namespace perfsim::test_support {

inline TimestampUs slowest_generated_iteration_us(const generators::llm::TransformerConfig& model,
                                                  const generators::llm::ParallelConfig& parallel,
                                                  const engine::ProgramSources& sources,
                                                  const HostOverheads& overheads) {
  std::vector<engine::RankProgram> programs;
  for (int rank = 0; rank < parallel.world_size(); ++rank)
    programs.push_back(
        engine::build_rank_program(generators::llm::generate_llm_rank(model, parallel, rank), rank,
                                   parallel.world_size(), sources));
  engine::InProcessClockSync sync;
  std::vector<engine::RankSimulator> simulators;
  for (const auto& program : programs)
    simulators.emplace_back(program, overheads, sync, false);
  engine::run_to_completion(simulators, sync);
  TimestampUs slowest = 0;
  for (const auto& simulator : simulators)
    slowest = std::max(slowest, simulator.result().iteration_us);
  return slowest;
}

}  // namespace perfsim::test_support
