#include "collectives/contention.hpp"

#include <algorithm>
#include <map>

#include "collectives/spine_traffic.hpp"
#include "topology/leaf_spine.hpp"

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
  const topology::Topology& topology = model.topology();
  std::vector<std::set<std::string>> links;
  std::map<std::string, int> sharers;
  std::vector<CollectivePrediction> predictions;
  // Leaf uplinks: the spine traffic of every collective in flight adds up per leaf.
  std::vector<std::vector<double>> spine_traffic;
  std::vector<double> leaf_total;
  for (const auto& collective : active) {
    links.push_back(links_used(topology, collective.ranks));
    for (const auto& link : links.back())
      ++sharers[link];
    predictions.push_back(model.predict(collective.kind, collective.bytes, collective.ranks));
    if (!topology::spine_can_bind(topology))
      continue;
    const auto flows = collective_flows(topology, collective.kind,
                                        predictions.back().nccl.algorithm, collective.ranks);
    spine_traffic.push_back(topology::leaf_spine_traffic(topology, flows));
    leaf_total.resize(spine_traffic.back().size(), 0.0);
    for (std::size_t leaf = 0; leaf < leaf_total.size(); ++leaf)
      leaf_total[leaf] += spine_traffic.back()[leaf];
  }
  const double capacity = topology::leaf_uplink_capacity(topology);
  std::vector<DurationUs> durations;
  for (std::size_t i = 0; i < active.size(); ++i) {
    const auto& prediction = predictions[i];
    double busiest = 1.0;
    for (const auto& link : links[i])
      busiest = std::max(busiest, static_cast<double>(sharers.at(link)));
    if (!spine_traffic.empty()) {
      // Its own spine traffic is in its duration already (prediction.spine_slowdown).
      for (std::size_t leaf = 0; leaf < leaf_total.size(); ++leaf) {
        if (spine_traffic[i][leaf] > 0.0)
          busiest = std::max(
              busiest, std::max(1.0, leaf_total[leaf] / capacity) / prediction.spine_slowdown);
      }
    }
    const double latency_share =
        prediction.nccl.time_us > 0.0 ? prediction.nccl.latency_us / prediction.nccl.time_us : 0.0;
    const DurationUs latency_us = prediction.duration_us * latency_share;
    durations.push_back(latency_us + busiest * (prediction.duration_us - latency_us));
  }
  return durations;
}

}  // namespace perfsim::collectives
