#include "microbench/host/collective_sizes.hpp"

#include <string>

#include "perfsim/error.hpp"

namespace perfsim::microbench {
namespace {

constexpr char kCollectiveSweepSource[] = "<collective sweep>";

}  // namespace

bool splits_over_ranks(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllv:
      return true;
    default:
      return false;
  }
}

Bytes collective_buffer_bytes(CollectiveKind kind, Bytes message_bytes, int n_ranks) {
  if (n_ranks < 1)
    throw InputError(kCollectiveSweepSource, "n_ranks",
                     "must be at least 1, got " + std::to_string(n_ranks));
  switch (kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return message_bytes + message_bytes / n_ranks;
    case CollectiveKind::kBarrier:
      return 0;
    default:
      return 2 * message_bytes;
  }
}

std::vector<Bytes> collective_message_sizes(CollectiveKind kind, const CollectiveSizeSweep& sweep) {
  if (sweep.start_bytes <= 0)
    throw InputError(kCollectiveSweepSource, "start_bytes", "must be positive");
  if (sweep.element_bytes <= 0)
    throw InputError(kCollectiveSweepSource, "element_bytes", "must be positive");
  if (sweep.n_ranks < 1)
    throw InputError(kCollectiveSweepSource, "n_ranks", "must be at least 1");
  if (collective_buffer_bytes(kind, sweep.start_bytes, sweep.n_ranks) > sweep.memory_cap_bytes)
    throw InputError(kCollectiveSweepSource, "memory_cap_bytes",
                     std::to_string(sweep.memory_cap_bytes) + " bytes hold no buffers of the " +
                         std::to_string(sweep.start_bytes) + "-byte first size");
  const Bytes granule =
      static_cast<Bytes>(sweep.element_bytes) * (splits_over_ranks(kind) ? sweep.n_ranks : 1);
  std::vector<Bytes> sizes;
  for (Bytes size = sweep.start_bytes;
       collective_buffer_bytes(kind, size, sweep.n_ranks) <= sweep.memory_cap_bytes; size *= 2) {
    const Bytes rounded = size / granule * granule;
    if (rounded > 0 && (sizes.empty() || sizes.back() != rounded))
      sizes.push_back(rounded);
    if (size > INT64_MAX / 2)
      break;
  }
  return sizes;
}

}  // namespace perfsim::microbench
