#pragma once
// Runs the simulated ranks of this process to completion on one thread. Runnable ranks wait in
// a ready queue; each advances until it needs a collective that has not resolved and is then
// parked on that collective, to be queued again only when the ClockSync reports it resolved
// (a rank that waits is never re-advanced to find out). When no rank is ready, the ClockSync
// is asked to make progress (under MPI: block until some reduction completes); when nothing
// can, the run is a deadlock and fails with the blocked collectives named, instead of hanging.
#include <chrono>
#include <functional>
#include <span>
#include <vector>

#include "mpi_sim/engine/clock_sync.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"

namespace perfsim::engine {

// How far this process's ranks are, for a progress line.
struct RunProgress {
  std::size_t ranks_finished = 0;
  std::size_t ranks = 0;
  std::size_t ops_run = 0;
  std::size_t ops_total = 0;
};
using ProgressCallback = std::function<void(const RunProgress&)>;

// `progress`, when set, is called while ranks run, at most once per `progress_interval` (and
// no more often than once per 64 rank advances).
inline constexpr std::chrono::milliseconds kDefaultProgressInterval{500};
void run_to_completion(std::span<RankSimulator> simulators, ClockSync& sync,
                       const ProgressCallback& progress = {},
                       std::chrono::milliseconds progress_interval = kDefaultProgressInterval);

// One simulator per program, run to completion; their results in program order.
std::vector<RankResult> simulate_programs(std::span<const RankProgram> programs,
                                          const HostOverheads& overheads, ClockSync& sync,
                                          bool record_timeline = false);

}  // namespace perfsim::engine
