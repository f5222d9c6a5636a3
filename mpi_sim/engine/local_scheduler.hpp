#pragma once
// Runs the simulated ranks of this process to completion on one thread: each rank advances
// until it needs a collective that has not resolved; when no rank can move, the ClockSync is
// asked to make progress (MPI completion); when nothing can, the run is a deadlock and fails
// with the blocked collectives named, instead of hanging.
#include <span>

#include "mpi_sim/engine/clock_sync.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"

namespace perfsim::engine {

void run_to_completion(std::span<RankSimulator> simulators, ClockSync& sync);

}  // namespace perfsim::engine
