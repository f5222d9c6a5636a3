#include "collectives/bus_factor.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "perfsim/error.hpp"

namespace perfsim::collectives {

double bus_factor(CollectiveKind kind, int n_ranks) {
  if (n_ranks < 1)
    throw RuntimeFailure("bus_factor: group of " + std::to_string(n_ranks) + " ranks");
  const double n = n_ranks;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * (n - 1.0) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllv:
    case CollectiveKind::kHierarchicalAllToAll:
      return (n - 1.0) / n;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kSend:
    case CollectiveKind::kRecv:
      return 1.0;
    case CollectiveKind::kBarrier:
      return 0.0;
  }
  return 1.0;
}

Bytes all_to_allv_message_bytes(std::span<const Bytes> sent_per_rank,
                                std::span<const Bytes> received_per_rank) {
  if (sent_per_rank.size() != received_per_rank.size())
    throw RuntimeFailure("all_to_allv_message_bytes: " + std::to_string(sent_per_rank.size()) +
                         " senders but " + std::to_string(received_per_rank.size()) + " receivers");
  Bytes largest = 0;
  for (std::size_t rank = 0; rank < sent_per_rank.size(); ++rank)
    largest = std::max({largest, sent_per_rank[rank], received_per_rank[rank]});
  return largest;
}

namespace {
Bytes split_bytes(const std::vector<std::int64_t>& split_elements, DType dtype) {
  const std::int64_t elements =
      std::accumulate(split_elements.begin(), split_elements.end(), std::int64_t{0});
  return elements * element_bytes(dtype);
}
}  // namespace

Bytes model_message_bytes(const CommInfo& comm) {
  switch (comm.kind) {
    case CollectiveKind::kAllGather:
      return comm.bytes_out > 0 ? comm.bytes_out : comm.bytes_in;
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllv: {
      const Bytes sent =
          comm.bytes_in > 0 ? comm.bytes_in : split_bytes(comm.in_split_elements, comm.dtype);
      const Bytes received =
          comm.bytes_out > 0 ? comm.bytes_out : split_bytes(comm.out_split_elements, comm.dtype);
      return std::max(sent, received);
    }
    case CollectiveKind::kHierarchicalAllToAll:  // node-level vs GPU-level copies
      return std::max(comm.bytes_in, comm.bytes_out);
    default:
      return comm.bytes_in > 0 ? comm.bytes_in : comm.bytes_out;
  }
}

}  // namespace perfsim::collectives
