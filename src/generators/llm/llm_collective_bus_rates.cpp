#include "generators/llm/llm_collective_bus_rates.hpp"

#include <algorithm>

#include "generators/llm/nominal_collective_curves.hpp"
#include "perfsim/error.hpp"
#include "topology/group_route.hpp"

namespace perfsim::generators::llm {
namespace {

double group_bus_GBps(const std::vector<int>& ranks, const topology::Topology& topology) {
  if (ranks.size() < 2 ||
      static_cast<int>(*std::max_element(ranks.begin(), ranks.end())) >= topology.world_size())
    return 0.0;
  const topology::GroupRoute route = topology::resolve_group(topology, ranks);
  double bus_GBps = 0.0;
  if (!route.intra_class.empty())
    bus_GBps = topology.link_class(route.intra_class).bandwidth_GBps;
  if (!route.inter_class.empty()) {
    // The node's NICs serving the group, shared by its ranks on that node.
    const double nic_GBps = topology.link_class(route.inter_class).bandwidth_GBps *
                            std::max(1, route.nics_per_node) / std::max(1, route.ranks_per_node);
    bus_GBps = bus_GBps > 0 ? std::min(bus_GBps, nic_GBps) : nic_GBps;
  }
  return bus_GBps * kNominalBusEfficiency;
}

}  // namespace

CollectiveBusRates collective_bus_rates(const ParallelConfig& parallel,
                                        const topology::Topology& topology) {
  const std::string tp = tp_group_name(parallel, 0), dp = dp_group_name(parallel, 0);
  const std::string cp = parallel.cp > 1 ? cp_group_name(parallel, 0) : "";
  const std::string ep = parallel.ep > 1 ? ep_group_name(parallel, 0) : "";
  CollectiveBusRates rates;
  for (const ProcessGroup& group : process_groups_of(parallel, 0)) {
    if (group.name == tp)
      rates.tp_GBps = group_bus_GBps(group.ranks, topology);
    else if (group.name == dp)
      rates.dp_GBps = group_bus_GBps(group.ranks, topology);
    else if (!cp.empty() && group.name == cp)
      rates.cp_GBps = group_bus_GBps(group.ranks, topology);
    if (!ep.empty() && group.name == ep)  // may be the DP group's ranks and name
      rates.ep_GBps = group_bus_GBps(group.ranks, topology);
  }
  return rates;
}

ParallelConfig with_expert_node_layout(ParallelConfig parallel,
                                       const topology::Topology& topology) {
  if (parallel.ep < 2)
    return parallel;
  const std::string ep = ep_group_name(parallel, 0);
  for (const ProcessGroup& group : process_groups_of(parallel, 0)) {
    if (group.name != ep || group.ranks.empty() ||
        *std::max_element(group.ranks.begin(), group.ranks.end()) >= topology.world_size())
      continue;
    const topology::GroupRoute route = topology::resolve_group(topology, group.ranks);
    if (parallel.moe_flex() && !route.balanced)
      throw InputError(topology.source, "nodes",
                       "--moe-token-dispatcher flex: the EP group has a different number of "
                       "ranks on the nodes it spans (not modelled)");
    parallel.ep_ranks_per_node = route.ranks_per_node;
  }
  return parallel;
}

ParallelConfig with_collective_bus_rates(ParallelConfig parallel,
                                         const topology::Topology& topology) {
  parallel.bus_rates = collective_bus_rates(parallel, topology);
  return parallel;
}

}  // namespace perfsim::generators::llm
