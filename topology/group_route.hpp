#pragma once
// Which link classes a process group's collective traffic crosses, and with which algorithm.
#include <span>
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace perfsim::topology {

enum class GroupAlgorithm {
  kLocal,         // one rank: nothing crosses a link
  kFlat,          // one phase over one link class (all ranks in a node, or one rank per node)
  kHierarchical,  // intra-node phase + inter-node phase over the NICs + intra-node phase
};

struct GroupRoute {
  GroupAlgorithm algorithm = GroupAlgorithm::kLocal;
  int n_ranks = 0;
  int n_nodes = 0;
  int ranks_per_node = 0;   // the most ranks the group has on one node
  bool balanced = true;     // the same number of ranks on every node it spans
  int nics_per_node = 0;    // distinct NICs serving the group's GPUs on its fullest node
  std::string intra_class;  // link class of the intra-node phase ("" when none)
  std::string inter_class;  // NIC link class ("" when the group stays in one node)
  std::vector<std::string> classes_crossed;  // every class some of its traffic uses, sorted
};

// Resolves a group given by its global ranks (any order, no duplicates). Inside a node:
// NVSwitch -> the switch's class; an NVLink mesh -> the ring over the group's GPUs whose
// thinnest link is thickest (NCCL builds rings over NVLink when it can), its class from
// ring_link_classes by that link count, or the PCIe class when the ring must use a pair without
// NVLink (mixed NVLink/PCIe); PCIe only -> the PCIe class. Across nodes: the NIC class.
// Throws InputError(topology source, "ranks", ...) for an empty group, a rank outside the
// cluster or a duplicate rank.
GroupRoute resolve_group(const Topology& topology, std::span<const int> global_ranks);

}  // namespace perfsim::topology
