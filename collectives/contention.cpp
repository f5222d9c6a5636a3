#include "collectives/contention.hpp"

#include <algorithm>
#include <map>

namespace perfsim::collectives {

std::set<std::string> links_used(const topology::Topology& topology,
                                 std::span<const int> global_ranks) {
  std::map<int, std::vector<int>> gpus_by_node;
  for (int rank : global_ranks)
    gpus_by_node[topology.node_of(rank)].push_back(topology.local_gpu_of(rank));
  std::set<std::string> links;
  const bool spans_nodes = gpus_by_node.size() > 1;
  for (const auto& [node, gpus] : gpus_by_node) {
    for (int gpu : gpus) {
      const std::string where = std::to_string(node) + ":";
      if (gpus.size() > 1)
        links.insert("nvlink:" + where + std::to_string(gpu));
      if (spans_nodes)
        links.insert("nic:" + where + std::to_string(topology.nic_of(gpu)));
    }
  }
  return links;
}

std::vector<DurationUs> contended_durations_us(const CollectiveModel& model,
                                               std::span<const ConcurrentCollective> active) {
  std::vector<std::set<std::string>> links;
  std::map<std::string, int> sharers;
  for (const auto& collective : active) {
    links.push_back(links_used(model.topology(), collective.ranks));
    for (const auto& link : links.back())
      ++sharers[link];
  }
  std::vector<DurationUs> durations;
  for (std::size_t i = 0; i < active.size(); ++i) {
    const auto prediction = model.predict(active[i].kind, active[i].bytes, active[i].ranks);
    int busiest = 1;
    for (const auto& link : links[i])
      busiest = std::max(busiest, sharers.at(link));
    const double latency_share =
        prediction.nccl.time_us > 0.0 ? prediction.nccl.latency_us / prediction.nccl.time_us : 0.0;
    const DurationUs latency_us = prediction.duration_us * latency_share;
    durations.push_back(latency_us + busiest * (prediction.duration_us - latency_us));
  }
  return durations;
}

}  // namespace perfsim::collectives
