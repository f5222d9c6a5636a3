#include "mpi_sim/engine/symmetric_clock_sync.hpp"

#include <algorithm>
#include <memory>

namespace perfsim::engine {
namespace {

LocalCollectiveTable make_table(std::vector<int> simulated_ranks) {
  std::sort(simulated_ranks.begin(), simulated_ranks.end());
  auto ranks = std::make_shared<const std::vector<int>>(std::move(simulated_ranks));
  return LocalCollectiveTable(
      [ranks](int rank) { return std::binary_search(ranks->begin(), ranks->end(), rank); });
}

}  // namespace

SymmetricClockSync::SymmetricClockSync(std::vector<int> simulated_ranks)
    : table_(make_table(std::move(simulated_ranks))) {}

CollectiveHandle SymmetricClockSync::post(const CollectivePost& post) {
  auto [handle, complete] = table_.add(post);
  if (complete) {
    auto& aggregate = table_.at(handle);
    aggregate.timing =
        CollectiveTiming{aggregate.max_ready_us, aggregate.max_ready_us + aggregate.duration_us};
  }
  return handle;
}

std::optional<CollectiveTiming> SymmetricClockSync::poll(CollectiveHandle handle) {
  return table_.at(handle).timing;
}

}  // namespace perfsim::engine
