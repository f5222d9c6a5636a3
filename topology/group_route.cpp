#include "topology/group_route.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "perfsim/error.hpp"

namespace perfsim::topology {
namespace {

// For <= 8 GPUs every ring (Hamiltonian cycle) is tried; for more, the given order is used.
constexpr std::size_t kMaxExhaustiveRing = 8;

struct Ring {
  std::vector<int> order;
  int thinnest_links = 0;
};

int ring_thinnest(const std::vector<std::vector<int>>& matrix, const std::vector<int>& order) {
  if (order.size() < 2)
    return 0;
  int thinnest = matrix[order.back()][order.front()];
  for (std::size_t i = 1; i < order.size(); ++i)
    thinnest = std::min(thinnest, matrix[order[i - 1]][order[i]]);
  return thinnest;
}

Ring best_ring(const std::vector<std::vector<int>>& matrix, std::vector<int> gpus) {
  std::sort(gpus.begin(), gpus.end());
  Ring best{gpus, ring_thinnest(matrix, gpus)};
  if (gpus.size() > kMaxExhaustiveRing || gpus.size() < 3)
    return best;
  // Fix the first GPU (rotations are the same ring) and permute the rest.
  std::vector<int> order = gpus;
  while (std::next_permutation(order.begin() + 1, order.end())) {
    const int thinnest = ring_thinnest(matrix, order);
    if (thinnest > best.thinnest_links)
      best = {order, thinnest};
  }
  return best;
}

// The intra-node class for local GPUs `gpus` (size >= 2); adds what it crosses to `crossed`.
std::string intra_class(const Topology& topology, const std::vector<int>& gpus,
                        std::set<std::string>& crossed) {
  const NodeSpec& node = topology.node;
  switch (node.fabric) {
    case IntraNodeFabric::kNvSwitch:
      crossed.insert(node.nvswitch_link_class);
      return node.nvswitch_link_class;
    case IntraNodeFabric::kPcie:
      crossed.insert(node.pcie_link_class);
      return node.pcie_link_class;
    case IntraNodeFabric::kNvLinkMesh:
      break;
  }
  const Ring ring = best_ring(node.nvlink_matrix, gpus);
  const auto& order = ring.order;
  const std::size_t edges = order.size() == 2 ? 1 : order.size();
  for (std::size_t i = 0; i < edges; ++i) {
    const int links = node.nvlink_matrix[order[i]][order[(i + 1) % order.size()]];
    crossed.insert(links > 0 ? node.ring_link_classes.at(links) : node.pcie_link_class);
  }
  return ring.thinnest_links > 0 ? node.ring_link_classes.at(ring.thinnest_links)
                                 : node.pcie_link_class;
}

}  // namespace

GroupRoute resolve_group(const Topology& topology, std::span<const int> global_ranks) {
  if (global_ranks.empty())
    throw InputError(topology.source, "ranks", "empty process group");
  std::map<int, std::vector<int>> gpus_by_node;
  std::set<int> seen;
  for (int rank : global_ranks) {
    if (rank < 0 || rank >= topology.world_size())
      throw InputError(topology.source, "ranks",
                       "rank " + std::to_string(rank) + " is outside the " +
                           std::to_string(topology.world_size()) + " GPUs of '" + topology.name +
                           "' (" + std::to_string(topology.nodes) + " nodes)");
    if (!seen.insert(rank).second)
      throw InputError(topology.source, "ranks",
                       "rank " + std::to_string(rank) + " appears twice in one group");
    gpus_by_node[topology.node_of(rank)].push_back(topology.local_gpu_of(rank));
  }
  GroupRoute route;
  route.n_ranks = static_cast<int>(global_ranks.size());
  route.n_nodes = static_cast<int>(gpus_by_node.size());
  const std::vector<int>* fullest = nullptr;
  for (const auto& [node, gpus] : gpus_by_node) {
    if (!fullest || gpus.size() > fullest->size())
      fullest = &gpus;
  }
  route.ranks_per_node = static_cast<int>(fullest->size());
  route.balanced = std::all_of(gpus_by_node.begin(), gpus_by_node.end(), [&](const auto& entry) {
    return entry.second.size() == fullest->size();
  });
  std::set<std::string> crossed;
  if (route.n_ranks == 1) {
    route.algorithm = GroupAlgorithm::kLocal;
    return route;
  }
  if (route.ranks_per_node > 1)
    route.intra_class = intra_class(topology, *fullest, crossed);
  if (route.n_nodes > 1) {
    route.inter_class = topology.node.nics->link_class;
    crossed.insert(route.inter_class);
    std::set<int> nics;
    for (int gpu : *fullest)
      nics.insert(topology.nic_of(gpu));
    route.nics_per_node = static_cast<int>(nics.size());
  }
  route.algorithm = (route.n_nodes > 1 && route.ranks_per_node > 1) ? GroupAlgorithm::kHierarchical
                                                                    : GroupAlgorithm::kFlat;
  route.classes_crossed.assign(crossed.begin(), crossed.end());
  return route;
}

}  // namespace perfsim::topology
