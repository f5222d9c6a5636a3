#include "mpi_sim/engine/local_scheduler.hpp"

#include <chrono>
#include <string>

#include "perfsim/error.hpp"

namespace perfsim::engine {

namespace {

RunProgress progress_of(std::span<RankSimulator> simulators) {
  RunProgress progress;
  progress.ranks = simulators.size();
  for (const RankSimulator& simulator : simulators) {
    progress.ranks_finished += simulator.finished() ? 1 : 0;
    progress.ops_run += simulator.ops_run();
    progress.ops_total += simulator.ops_total();
  }
  return progress;
}

}  // namespace

void run_to_completion(std::span<RankSimulator> simulators, ClockSync& sync,
                       const ProgressCallback& progress) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kProgressInterval = std::chrono::milliseconds(500);
  auto last_progress = Clock::now();
  while (true) {
    // A clock read costs little next to a round over every rank.
    if (progress && Clock::now() - last_progress >= kProgressInterval) {
      last_progress = Clock::now();
      progress(progress_of(simulators));
    }
    bool all_finished = true;
    bool moved = false;
    for (RankSimulator& simulator : simulators) {
      if (simulator.finished())
        continue;
      const std::size_t before = simulator.progress_count();
      simulator.advance();
      moved = moved || simulator.finished() || simulator.progress_count() != before;
      all_finished = all_finished && simulator.finished();
    }
    if (all_finished)
      return;
    if (moved)
      continue;
    if (sync.make_progress())
      continue;
    std::string blocked;
    std::size_t listed = 0;
    for (const RankSimulator& simulator : simulators) {
      if (simulator.finished())
        continue;
      if (listed++ < 8)
        blocked += "\n  " + simulator.blocked_on();
    }
    if (listed > 8)
      blocked += "\n  ... and " + std::to_string(listed - 8) + " more ranks";
    throw InputError(
        "the traces", "simulation",
        "deadlock: no simulated rank can proceed (a collective waits for a member "
        "that never posts it; check the traces' collective order and process groups):" +
            blocked);
  }
}

std::vector<RankResult> simulate_programs(std::span<const RankProgram> programs,
                                          const HostOverheads& overheads, ClockSync& sync,
                                          bool record_timeline) {
  std::vector<RankSimulator> simulators;
  simulators.reserve(programs.size());
  for (const RankProgram& program : programs)
    simulators.emplace_back(program, overheads, sync, record_timeline);
  run_to_completion(simulators, sync);
  std::vector<RankResult> results;
  results.reserve(simulators.size());
  for (const RankSimulator& simulator : simulators)
    results.push_back(simulator.result());
  return results;
}

}  // namespace perfsim::engine
