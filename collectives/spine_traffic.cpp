#include "collectives/spine_traffic.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace perfsim::collectives {
namespace {

// The group's nodes in NCCL's order and the NICs (rails) it uses on each, sorted.
struct GroupNodes {
  std::vector<int> order;
  std::map<int, std::vector<int>> rails;
};

GroupNodes group_nodes(const topology::Topology& topology, std::span<const int> ranks,
                       bool with_siblings, int world_size) {
  GroupNodes nodes;
  std::map<int, std::set<int>> rails;
  for (int rank : ranks) {
    const int node = topology.node_of(rank);
    if (!rails.count(node))
      nodes.order.push_back(node);
    rails[node].insert(topology.nic_of(topology.local_gpu_of(rank)));
  }
  if (with_siblings) {
    const int job = world_size > 0 ? world_size : topology.world_size();
    for (auto& [node, used] : rails) {
      for (int gpu = 0; gpu < topology.node.gpus; ++gpu) {
        if (node * topology.node.gpus + gpu < job)
          used.insert(topology.nic_of(gpu));
      }
    }
  }
  for (auto& [node, used] : rails) {
    used.erase(-1);
    nodes.rails[node].assign(used.begin(), used.end());
  }
  return nodes;
}

// A hop from node `from` to node `to` at `rate` of line rate per rail: the i-th rail of one
// meets the i-th of the other; with unequal rail counts the hop's throughput is the smaller
// side's, spread over the larger side's rails.
void add_hop(const GroupNodes& nodes, int from, int to, double rate,
             std::vector<topology::NicFlow>& flows) {
  const auto& out = nodes.rails.at(from);
  const auto& in = nodes.rails.at(to);
  if (out.empty() || in.empty())
    return;
  const std::size_t pairs = std::max(out.size(), in.size());
  const double share = static_cast<double>(std::min(out.size(), in.size())) / pairs;
  for (std::size_t i = 0; i < pairs; ++i)
    flows.push_back({from, out[i % out.size()], to, in[i % in.size()], rate * share});
}

// NCCL's binary tree over n nodes (ncclGetBtree): the parent of index i, -1 for the root.
int btree_parent(int n, int i) {
  if (i == 0)
    return -1;
  const int bit = i & -i;
  const int up = (i ^ bit) | (bit << 1);
  return up < n ? up : i ^ bit;
}

// Tree 1 of NCCL's double binary tree: the mirror of tree 0 for even n, tree 0 shifted by one
// for odd n (ncclGetDtree).
int dtree1_parent(int n, int i) {
  if (n % 2 == 1) {
    const int parent = btree_parent(n, (i - 1 + n) % n);
    return parent < 0 ? -1 : (parent + 1) % n;
  }
  const int parent = btree_parent(n, n - 1 - i);
  return parent < 0 ? -1 : n - 1 - parent;
}

// The flows of the group itself (n >= 2 nodes).
std::vector<topology::NicFlow> group_flows(const GroupNodes& nodes, CollectiveKind kind,
                                           NcclAlgorithm algorithm) {
  std::vector<topology::NicFlow> flows;
  const auto& order = nodes.order;
  const int n = static_cast<int>(order.size());
  switch (algorithm) {
    case NcclAlgorithm::kNvls:  // inside one node
      return flows;
    case NcclAlgorithm::kRing: {
      const bool chain = kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kReduce;
      for (int k = 0; k < (chain ? n - 1 : n); ++k)
        add_hop(nodes, order[k], order[(k + 1) % n], 1.0, flows);
      return flows;
    }
    case NcclAlgorithm::kTree:
    case NcclAlgorithm::kNvlsTree: {
      std::vector<std::pair<int, int>> edges;  // (parent, child) indices, both trees
      std::vector<int> degree(static_cast<std::size_t>(n), 0);
      for (int i = 0; i < n; ++i) {
        for (const int parent : {btree_parent(n, i), dtree1_parent(n, i)}) {
          if (parent < 0)
            continue;
          edges.emplace_back(parent, i);
          ++degree[static_cast<std::size_t>(parent)];
          ++degree[static_cast<std::size_t>(i)];
        }
      }
      const double rate = 1.0 / *std::max_element(degree.begin(), degree.end());
      for (const auto& [parent, child] : edges) {
        add_hop(nodes, order[parent], order[child], rate, flows);
        add_hop(nodes, order[child], order[parent], rate, flows);
      }
      return flows;
    }
    case NcclAlgorithm::kPointToPoint: {
      if (is_point_to_point(kind)) {
        add_hop(nodes, order[0], order[1], 1.0, flows);
        return flows;
      }
      for (int from : order) {
        for (int to : order) {
          if (from != to)
            add_hop(nodes, from, to, 1.0 / (n - 1), flows);
        }
      }
      return flows;
    }
  }
  return flows;
}

}  // namespace

std::vector<topology::NicFlow> collective_flows(const topology::Topology& topology,
                                                CollectiveKind kind, NcclAlgorithm algorithm,
                                                std::span<const int> global_ranks,
                                                bool with_siblings, int world_size) {
  std::vector<topology::NicFlow> flows;
  if (!topology.node.nics)
    return flows;
  const GroupNodes nodes = group_nodes(topology, global_ranks, with_siblings, world_size);
  const int n = static_cast<int>(nodes.order.size());
  if (n < 2)
    return flows;
  const auto& order = nodes.order;
  flows = group_flows(nodes, kind, algorithm);
  if (with_siblings && topology.leaf_spine) {
    // The job's other nodes under the same leaves run sibling groups shaped like this one:
    // scale each node's flows by job nodes / group nodes of its leaf group.
    const int per_leaf = topology.leaf_spine->nodes_per_leaf;
    const int job = world_size > 0 ? world_size : topology.world_size();
    const int job_nodes = (job + topology.node.gpus - 1) / topology.node.gpus;
    std::map<int, int> group_nodes_in;
    for (int node : order)
      ++group_nodes_in[node / per_leaf];
    for (topology::NicFlow& flow : flows) {
      const int leaf_group = flow.source_node / per_leaf;
      const int job_in = std::min(per_leaf, job_nodes - leaf_group * per_leaf);
      flow.rate *= static_cast<double>(std::max(job_in, 1)) / group_nodes_in.at(leaf_group);
    }
  }
  return flows;
}

double spine_slowdown(const topology::Topology& topology, CollectiveKind kind,
                      NcclAlgorithm algorithm, std::span<const int> global_ranks) {
  if (!topology::spine_can_bind(topology))
    return 1.0;
  const auto flows = collective_flows(topology, kind, algorithm, global_ranks);
  return topology::spine_load(topology, flows).slowdown();
}

}  // namespace perfsim::collectives
