#include "mpi_sim/engine/in_process_clock_sync.hpp"

namespace perfsim::engine {

CollectiveHandle InProcessClockSync::post(const CollectivePost& post) {
  auto [handle, complete] = table_.add(post);
  if (complete) {
    auto& aggregate = table_.at(handle);
    aggregate.timing =
        CollectiveTiming{aggregate.max_ready_us, aggregate.max_ready_us + aggregate.duration_us};
    note_resolved(handle);
  }
  return handle;
}

std::optional<CollectiveTiming> InProcessClockSync::poll(CollectiveHandle handle) {
  return table_.at(handle).timing;
}

CollectiveHandle UnsynchronizedClockSync::post(const CollectivePost& post) {
  timings_.push_back({post.ready_us, post.ready_us + post.duration_us});
  return CollectiveHandle{timings_.size() - 1};
}

std::optional<CollectiveTiming> UnsynchronizedClockSync::poll(CollectiveHandle handle) {
  return timings_.at(handle.id);
}

}  // namespace perfsim::engine
