#include "microbench/host/all_to_allv_sizes.hpp"

#include <algorithm>
#include <string>

#include "collectives/bus_factor.hpp"
#include "microbench/host/sweep_random.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench {

Bytes AllToAllvSizes::bytes_between(int sender, int receiver) const {
  return bytes.at(static_cast<std::size_t>(sender) * static_cast<std::size_t>(n_ranks) +
                  static_cast<std::size_t>(receiver));
}

Bytes AllToAllvSizes::sent_by(int rank) const {
  Bytes total = 0;
  for (int peer = 0; peer < n_ranks; ++peer)
    total += bytes_between(rank, peer);
  return total;
}

Bytes AllToAllvSizes::received_by(int rank) const {
  Bytes total = 0;
  for (int peer = 0; peer < n_ranks; ++peer)
    total += bytes_between(peer, rank);
  return total;
}

std::vector<Bytes> AllToAllvSizes::sent_per_rank() const {
  std::vector<Bytes> totals;
  for (int rank = 0; rank < n_ranks; ++rank)
    totals.push_back(sent_by(rank));
  return totals;
}

std::vector<Bytes> AllToAllvSizes::received_per_rank() const {
  std::vector<Bytes> totals;
  for (int rank = 0; rank < n_ranks; ++rank)
    totals.push_back(received_by(rank));
  return totals;
}

Bytes AllToAllvSizes::model_message_bytes() const {
  return collectives::all_to_allv_message_bytes(sent_per_rank(), received_per_rank());
}

AllToAllvSizes random_all_to_allv_sizes(int n_ranks, Bytes bytes_per_rank, int element_bytes,
                                        std::uint64_t seed) {
  constexpr char kSource[] = "<all-to-allv sizes>";
  if (n_ranks < 1)
    throw InputError(kSource, "n_ranks", "must be at least 1, got " + std::to_string(n_ranks));
  if (bytes_per_rank < 0)
    throw InputError(kSource, "bytes_per_rank", "must not be negative");
  if (element_bytes <= 0)
    throw InputError(kSource, "element_bytes", "must be positive");
  SweepRandom random(seed);
  const std::int64_t elements = bytes_per_rank / element_bytes;
  AllToAllvSizes sizes;
  sizes.n_ranks = n_ranks;
  std::vector<std::int64_t> cuts(static_cast<std::size_t>(n_ranks) + 1);
  for (int sender = 0; sender < n_ranks; ++sender) {
    cuts.front() = 0;
    cuts.back() = elements;
    for (int i = 1; i < n_ranks; ++i)
      cuts[static_cast<std::size_t>(i)] = random.uniform_int(0, elements);
    std::sort(cuts.begin() + 1, cuts.end() - 1);
    for (int receiver = 0; receiver < n_ranks; ++receiver) {
      const auto part =
          cuts[static_cast<std::size_t>(receiver) + 1] - cuts[static_cast<std::size_t>(receiver)];
      sizes.bytes.push_back(part * element_bytes);
    }
  }
  return sizes;
}

}  // namespace perfsim::microbench
