#pragma once
// A two-tier (leaf/spine) inter-node fabric with oversubscribed leaf uplinks: which leaf each
// NIC hangs off, what a leaf can send to the spine, and how much of a set of node-to-node flows
// must go through it.
//
// Schema (top-level "leaf_spine" of a topology file; absent = non-blocking, as before):
//   "leaf_spine": {
//     "nodes_per_leaf": 4,         // or "nics_per_leaf": 32 (a leaf's down ports)
//     "rail_optimized": true,      // required
//     "oversubscription": 2.0,     // leaf downlink : uplink bandwidth, >= 1 (1 = non-blocking)
//     "note": "..."
//   }
// Nodes form leaf groups of nodes_per_leaf in node order (node / nodes_per_leaf).
//  - rail-optimized: NIC r of every node of group g goes to leaf (g, r), so one leaf serves
//    nodes_per_leaf ports; nics_per_leaf = nodes_per_leaf.
//  - otherwise all NICs of a node go to leaf g, which serves nodes_per_leaf x NICs ports;
//    nics_per_leaf must then be a multiple of the NICs per node.
// So for the same switch (ports per leaf), a rail-optimized fabric puts NICs-per-node times more
// nodes under one leaf tier than one that is not. A leaf's uplink capacity is its ports x the
// NIC rate / oversubscription (the uplinks are pooled: adaptive routing or ECMP over many flows;
// one flow pinned to one uplink is not modelled). The spine itself is non-blocking.
//
// Flows are in units of one NIC's line rate. A flow whose two ends hang off different leaves
// goes up its source leaf's uplinks and down its destination leaf's: the load of a leaf is the
// larger of the two directions, over its uplink capacity.
#include <span>
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace perfsim::topology {

struct NicFlow {
  int source_node = 0;
  int source_nic = 0;
  int destination_node = 0;
  int destination_nic = 0;
  double rate = 1.0;  // NIC line rates
};

// The leaf a node's NIC hangs off (one leaf per node group when not rail-optimized). -1 when
// the topology has no leaf/spine section.
int leaf_of(const Topology& topology, int node, int nic);
// A leaf's uplink capacity in NIC line rates: its down ports / oversubscription.
double leaf_uplink_capacity(const Topology& topology);

struct SpineLoad {
  double ratio = 0.0;  // the busiest leaf's spine traffic / its uplink capacity
  int busiest_leaf = -1;
  // max(1, ratio): how much slower than line rate the flows must run for the busiest leaf's
  // uplinks to carry them.
  double slowdown() const { return ratio > 1.0 ? ratio : 1.0; }
};
// Per leaf: the larger of its up and down spine traffic (NIC line rates) of `flows`, in leaf
// order; empty without a leaf/spine section.
std::vector<double> leaf_spine_traffic(const Topology& topology, std::span<const NicFlow> flows);
SpineLoad spine_load(const Topology& topology, std::span<const double> leaf_traffic);
SpineLoad spine_load(const Topology& topology, std::span<const NicFlow> flows);

// True when the fabric can slow anything down (a section with oversubscription > 1).
bool spine_can_bind(const Topology& topology);
// For run output: "" when spine_can_bind is false, else a sentence saying the spine term is
// nominal (derived from the section, no measured sweep across leaves behind it).
std::string leaf_spine_provenance(const Topology& topology);

}  // namespace perfsim::topology
