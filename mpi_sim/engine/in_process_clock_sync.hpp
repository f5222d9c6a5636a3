#pragma once
// Every member of every collective lives in this process: resolution is immediate once the
// last member posts. Used for tests and for groups that are local under --ranks-per-process.
#include <cstddef>
#include <functional>
#include <unordered_map>

#include "mpi_sim/engine/clock_sync.hpp"
#include "mpi_sim/engine/local_collective_table.hpp"

namespace perfsim::engine {

class InProcessClockSync final : public ClockSync {
 public:
  InProcessClockSync() : table_([](int) { return true; }) {}
  // Only members for which `awaited` is true hold a collective back (a reduced world, see
  // SymmetricClockSync).
  explicit InProcessClockSync(std::function<bool(int)> awaited) : table_(std::move(awaited)) {}
  CollectiveHandle post(const CollectivePost& post) override;
  std::optional<CollectiveTiming> poll(CollectiveHandle handle) override;
  // Nothing is ever in flight elsewhere: if every rank is blocked, no post can arrive.
  bool make_progress() override { return false; }
  const LocalCollectiveTable& table() const { return table_; }

 private:
  LocalCollectiveTable table_;
};

// Each simulated rank on its own, with no partner: a collective starts when this rank is
// ready. For single-rank runs of a multi-rank trace; the output says communication was not
// synchronized.
class UnsynchronizedClockSync final : public ClockSync {
 public:
  CollectiveHandle post(const CollectivePost& post) override;
  std::optional<CollectiveTiming> poll(CollectiveHandle handle) override;
  bool make_progress() override { return false; }

 private:
  std::unordered_map<std::size_t, CollectiveTiming> timings_;  // until taken
  std::size_t next_id_ = 0;
};

}  // namespace perfsim::engine
