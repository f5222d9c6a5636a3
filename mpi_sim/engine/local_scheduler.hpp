#pragma once
// Runs the simulated ranks of this process to completion on one thread: each rank advances
// until it needs a collective that has not resolved; when no rank can move, the ClockSync is
// asked to make progress (MPI completion); when nothing can, the run is a deadlock and fails
// with the blocked collectives named, instead of hanging.
#include <span>
#include <vector>

#include "mpi_sim/engine/clock_sync.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"

namespace perfsim::engine {

void run_to_completion(std::span<RankSimulator> simulators, ClockSync& sync);

// One simulator per program, run to completion; their results in program order.
std::vector<RankResult> simulate_programs(std::span<const RankProgram> programs,
                                          const HostOverheads& overheads, ClockSync& sync,
                                          bool record_timeline = false);

}  // namespace perfsim::engine
