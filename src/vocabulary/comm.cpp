#include "perfsim/comm.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace perfsim {

std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kAllToAllv:
      return "all_to_allv";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kReduce:
      return "reduce";
    case CollectiveKind::kBarrier:
      return "barrier";
    case CollectiveKind::kSend:
      return "send";
    case CollectiveKind::kRecv:
      return "recv";
    case CollectiveKind::kHierarchicalAllToAll:
      return "hierarchical_all_to_all";
  }
  return "unknown";
}

std::optional<CollectiveKind> parse_collective(std::string_view name) {
  // Normalise: drop a "nccl:" / "c10d::" prefix, lower-case, drop '_' so that
  // "all_reduce", "allreduce_", "_allgather_base" and "all_gather" compare equal.
  if (auto colon = name.rfind(':'); colon != std::string_view::npos)
    name = name.substr(colon + 1);
  std::string key;
  for (char c : name) {
    if (c != '_')
      key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (key.size() > 4 && key.ends_with("base"))
    key.resize(key.size() - 4);
  if (key.size() > 6 && key.ends_with("single"))
    key.resize(key.size() - 6);
  if (key.size() > 8 && key.ends_with("coalesced"))
    key.resize(key.size() - 9);
  if (key.size() > 6 && key.ends_with("tensor"))
    key.resize(key.size() - 6);
  static constexpr std::array<std::pair<std::string_view, CollectiveKind>, 15> kNames{{
      {"allreduce", CollectiveKind::kAllReduce},
      {"alltoall", CollectiveKind::kAllToAll},
      {"alltoallv", CollectiveKind::kAllToAllv},
      {"allgather", CollectiveKind::kAllGather},
      {"allgatherinto", CollectiveKind::kAllGather},
      {"reducescatter", CollectiveKind::kReduceScatter},
      {"reducescatterv", CollectiveKind::kReduceScatter},
      {"broadcast", CollectiveKind::kBroadcast},
      {"reduce", CollectiveKind::kReduce},
      {"barrier", CollectiveKind::kBarrier},
      {"send", CollectiveKind::kSend},
      {"isend", CollectiveKind::kSend},
      {"recv", CollectiveKind::kRecv},
      {"irecv", CollectiveKind::kRecv},
      {"hierarchicalalltoall", CollectiveKind::kHierarchicalAllToAll},
  }};
  for (const auto& [spelling, kind] : kNames) {
    if (key == spelling)
      return kind;
  }
  return std::nullopt;
}

std::string point_to_point_group_name(int from_rank, int to_rank) {
  return "p2p:" + std::to_string(from_rank) + "->" + std::to_string(to_rank);
}

std::string point_to_point_stream_name(int from_rank, int to_rank, std::int64_t match_tag) {
  std::string name = point_to_point_group_name(from_rank, to_rank);
  if (match_tag != 0)
    name += "/tag" + std::to_string(match_tag);
  return name;
}

bool is_point_to_point(CollectiveKind kind) {
  return kind == CollectiveKind::kSend || kind == CollectiveKind::kRecv;
}

}  // namespace perfsim
