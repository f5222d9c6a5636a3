#include "mpi_sim/engine/in_process_clock_sync.hpp"

#include <string>

#include "perfsim/error.hpp"

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
  return table_.take_timing(handle);
}

CollectiveHandle UnsynchronizedClockSync::post(const CollectivePost& post) {
  const CollectiveHandle handle{next_id_++};
  timings_.emplace(handle.id, CollectiveTiming{post.ready_us, post.ready_us + post.duration_us});
  return handle;
}

std::optional<CollectiveTiming> UnsynchronizedClockSync::poll(CollectiveHandle handle) {
  const auto found = timings_.find(handle.id);
  if (found == timings_.end())
    throw RuntimeFailure("collective handle " + std::to_string(handle.id) +
                         ": not posted, or its timing was taken already");
  const CollectiveTiming timing = found->second;
  timings_.erase(found);  // its only member has it now
  return timing;
}

}  // namespace perfsim::engine
