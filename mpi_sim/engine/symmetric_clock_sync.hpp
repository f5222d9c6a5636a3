#pragma once
// Clock synchronization for a reduced world: only one representative of each class of
// identical ranks is simulated. In a Megatron layout every rank of one pipeline stage runs the
// same program whatever its tensor- or data-parallel index (same shapes, same collectives on
// congruent groups of a symmetric topology), so its clones post every collective at the same
// time as their representative and with the same duration. A collective then starts when the
// last SIMULATED member is ready: with one simulated member (a TP or DP group) at ready +
// duration, with two (a pipeline send/recv pair between representatives of two stages) at
// their max. Members that are not simulated are taken to be clones and never awaited.
//
// Correct only when that symmetry holds; tests compare it with the full simulation.
#include <vector>

#include "mpi_sim/engine/clock_sync.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"

namespace perfsim::engine {

class SymmetricClockSync final : public ClockSync {
 public:
  // `simulated_ranks`: the representatives, global simulated rank numbers.
  explicit SymmetricClockSync(std::vector<int> simulated_ranks);
  CollectiveHandle post(const CollectivePost& post) override { return awaited_.post(post); }
  std::optional<CollectiveTiming> poll(CollectiveHandle handle) override {
    return awaited_.poll(handle);
  }
  // Every awaited member is simulated in this process: if all are blocked, none will post.
  bool make_progress() override { return false; }
  void take_resolved(std::vector<CollectiveHandle>& into) override { awaited_.take_resolved(into); }

 private:
  InProcessClockSync awaited_;
};

}  // namespace perfsim::engine
