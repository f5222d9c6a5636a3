#pragma once
// How simulated ranks agree on when a collective happens (seed 001 Sec. IV-B, inter-rank
// synchronization): a collective starts when the last member is ready and ends `duration`
// later on every member. Implementations: InProcessClockSync (every member in this process)
// and MpiClockSync (mpi_sim/mpi/, members spread over MPI processes). Both resolve the same
// posts to bit-identical timings: start = max(ready), duration = min or max of the members'
// candidates, all exact operations.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "perfsim/duration_source.hpp"
#include "perfsim/units.hpp"

namespace perfsim::engine {

struct CollectiveHandle {
  std::size_t id = 0;
  bool operator==(const CollectiveHandle&) const = default;
};

// One member's contribution to one collective.
struct CollectivePost {
  int sim_rank = 0;
  std::string group;  // process group key ("" = world; "p2p:a->b" for a send/recv channel)
  std::size_t index_in_group = 0;
  std::span<const int> members;  // global simulated ranks of the group, ascending
  TimestampUs ready_us = 0;      // when this member's stream could start it
  // This member's view of the duration, combined over members as `combine` says (the same on
  // every member): the shortest for measured kernel times (the last rank to arrive waits
  // least, so its kernel time is the transfer itself), the longest for a model (all-to-allv
  // members see different sizes; the largest decides).
  DurationUs duration_us = 0;
  DurationCombine combine = DurationCombine::kLongest;
};

struct CollectiveTiming {
  TimestampUs start_us = 0;
  TimestampUs end_us = 0;
};

class ClockSync {
 public:
  virtual ~ClockSync() = default;
  // Registers a post; never blocks (real execution does not block at the launch either).
  virtual CollectiveHandle post(const CollectivePost& post) = 0;
  // The timing once every member has posted, without blocking. Each member that posted takes
  // the timing once (a simulator keeps it): the sync then frees what it held for the
  // collective, so it holds the collectives in flight rather than every one of the run, and
  // polling a handle again after its timing was taken is an error.
  virtual std::optional<CollectiveTiming> poll(CollectiveHandle handle) = 0;
  // Waits until some outstanding collective of this process has resolved. Returns false
  // when nothing can ever resolve (every outstanding collective waits for a member of this
  // process that is itself blocked): the caller reports a deadlock instead of hanging.
  virtual bool make_progress() = 0;
  // Resolves, without blocking, what has completed elsewhere (MPI); called now and then while
  // ranks are runnable so that other processes' reductions keep moving.
  virtual void test_progress() {}
  // Appends to `into` (after clearing it) every collective that resolved since the last call,
  // each once: a scheduler wakes the ranks parked on them instead of polling every blocked rank.
  // A collective whose poll() returned nothing resolves here before poll() returns its timing.
  virtual void take_resolved(std::vector<CollectiveHandle>& into) {
    into.clear();
    into.swap(resolved_);
  }

 protected:
  void note_resolved(CollectiveHandle handle) { resolved_.push_back(handle); }

 private:
  std::vector<CollectiveHandle> resolved_;
};

}  // namespace perfsim::engine
