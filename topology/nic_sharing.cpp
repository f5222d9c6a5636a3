#include "topology/nic_sharing.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "perfsim/error.hpp"

namespace perfsim::topology {

std::vector<std::vector<int>> even_rails(int nics, int gpus, const std::string& source,
                                         const std::string& pointer) {
  if (nics < 1 || gpus % nics != 0)
    throw InputError(source, pointer,
                     std::to_string(gpus) + " GPUs do not split evenly over " +
                         std::to_string(nics) + " NICs: list the GPUs of each NIC under rails");
  const int gpus_per_nic = gpus / nics;
  std::vector<std::vector<int>> rails(static_cast<std::size_t>(nics));
  for (int gpu = 0; gpu < gpus; ++gpu)
    rails[static_cast<std::size_t>(gpu / gpus_per_nic)].push_back(gpu);
  return rails;
}

double nic_copies(const Topology& topology, std::span<const int> members, int world_size) {
  if (!topology.node.nics)
    return 1.0;
  // Members behind each (node, NIC); the keys are in node order, so their nodes are the
  // group's nodes.
  std::map<std::pair<int, int>, int> members_behind;
  for (int rank : members)
    ++members_behind[{topology.node_of(rank), topology.nic_of(topology.local_gpu_of(rank))}];
  if (members_behind.empty() ||
      members_behind.begin()->first.first == members_behind.rbegin()->first.first)
    return 1.0;  // one node
  double copies = 1.0;
  for (const auto& [node_nic, inside] : members_behind) {
    const auto& [node, nic] = node_nic;
    if (nic < 0)
      continue;
    int running = 0;
    for (int gpu : topology.node.nics->rails[static_cast<std::size_t>(nic)]) {
      if (node * topology.node.gpus + gpu < world_size)
        ++running;
    }
    copies = std::max(copies, static_cast<double>(running) / inside);
  }
  return copies;
}

}  // namespace perfsim::topology
