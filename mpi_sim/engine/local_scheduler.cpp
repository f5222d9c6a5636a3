#include "mpi_sim/engine/local_scheduler.hpp"

#include <chrono>
#include <deque>
#include <string>
#include <unordered_map>

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

[[noreturn]] void fail_deadlock(std::span<RankSimulator> simulators) {
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
  throw InputError("the traces", "simulation",
                   "deadlock: no simulated rank can proceed (a collective waits for a member "
                   "that never posts it; check the traces' collective order and process groups):" +
                       blocked);
}

// Ranks parked per collective they wait on, and the queue of ranks that may run.
class ReadyQueue {
 public:
  explicit ReadyQueue(std::size_t ranks) {
    for (std::size_t index = 0; index < ranks; ++index)
      ready_.push_back(index);
  }
  bool empty() const { return ready_.empty(); }
  std::size_t pop() {
    const std::size_t index = ready_.front();
    ready_.pop_front();
    return index;
  }
  void park(std::size_t index, CollectiveHandle handle) { parked_[handle.id].push_back(index); }
  // Queues the ranks parked on the collectives `sync` reports resolved.
  void wake(ClockSync& sync) {
    sync.take_resolved(resolved_);
    for (CollectiveHandle handle : resolved_) {
      const auto waiters = parked_.find(handle.id);
      if (waiters == parked_.end())
        continue;
      ready_.insert(ready_.end(), waiters->second.begin(), waiters->second.end());
      parked_.erase(waiters);
    }
  }

 private:
  std::deque<std::size_t> ready_;
  std::unordered_map<std::size_t, std::vector<std::size_t>> parked_;  // handle id -> ranks
  std::vector<CollectiveHandle> resolved_;                            // reused buffer
};

}  // namespace

void run_to_completion(std::span<RankSimulator> simulators, ClockSync& sync,
                       const ProgressCallback& progress,
                       std::chrono::milliseconds progress_interval) {
  using Clock = std::chrono::steady_clock;
  // Between two looks at MPI while ranks are runnable: often enough that reductions other
  // processes wait on move, rarely enough that testing them costs little next to the ranks.
  constexpr std::size_t kAdvancesPerTest = 64;
  auto last_progress = Clock::now();
  ReadyQueue queue(simulators.size());
  std::size_t unfinished = 0;
  for (const RankSimulator& simulator : simulators)
    unfinished += simulator.finished() ? 0 : 1;
  std::size_t advances = 0;
  while (unfinished > 0) {
    while (!queue.empty()) {
      const std::size_t index = queue.pop();
      RankSimulator& simulator = simulators[index];
      if (simulator.finished())
        continue;
      if (simulator.advance() == RankSimulator::Progress::kFinished)
        --unfinished;
      else
        queue.park(index, simulator.blocked_handle());
      if (++advances % kAdvancesPerTest == 0) {
        sync.test_progress();
        if (progress && Clock::now() - last_progress >= progress_interval) {
          last_progress = Clock::now();
          progress(progress_of(simulators));
        }
      }
      queue.wake(sync);
    }
    if (unfinished == 0)
      return;
    if (!sync.make_progress())
      fail_deadlock(simulators);
    queue.wake(sync);
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
  for (RankSimulator& simulator : simulators)
    results.push_back(simulator.take_result());
  return results;
}

}  // namespace perfsim::engine
