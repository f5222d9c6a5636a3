#include "mpi_sim/engine/symmetric_clock_sync.hpp"

#include <algorithm>
#include <functional>
#include <memory>

namespace perfsim::engine {
namespace {

std::function<bool(int)> is_simulated(std::vector<int> simulated_ranks) {
  std::sort(simulated_ranks.begin(), simulated_ranks.end());
  auto ranks = std::make_shared<const std::vector<int>>(std::move(simulated_ranks));
  return [ranks](int rank) { return std::binary_search(ranks->begin(), ranks->end(), rank); };
}

}  // namespace

SymmetricClockSync::SymmetricClockSync(std::vector<int> simulated_ranks)
    : awaited_(is_simulated(std::move(simulated_ranks))) {}

}  // namespace perfsim::engine
