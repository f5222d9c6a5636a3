#pragma once
// A cluster topology as configs/topologies/*.json describes it: identical nodes of GPUs, the
// intra-node fabric (NVSwitch, an NVLink mesh with per-pair link counts, or PCIe only), PCIe
// switches, NICs with their rails, the inter-node network, and link classes that name the
// fitted collective curves (model-assets HDF5) used for traffic crossing them.
//
// Global rank r lives on node r / gpus_per_node as local GPU r % gpus_per_node.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfsim/comm.hpp"
#include "topology/pcie_transport.hpp"

namespace perfsim::topology {

enum class IntraNodeFabric { kNvSwitch, kNvLinkMesh, kPcie };

struct CurveReference {
  std::string asset;  // FittedCurve::name in the model assets
  // A curve measured on another link used as a stand-in: its bandwidth is multiplied by this
  // (latency unchanged), e.g. 0.5 for a 200G NIC described by a 400G sweep.
  double bandwidth_scale = 1.0;
  std::string note;          // why the stand-in is acceptable
  std::string json_pointer;  // where the topology names it, for errors
  // The same collective measured on the same fabric at other node (or GPU) counts: the model
  // carries the nearest measurement(s) to a group's shape (collectives/curve_transfer.hpp).
  // Used when the model assets hold them; `asset` must be there.
  std::vector<std::string> other_counts;
};

struct LinkClass {
  std::string name;
  std::string medium;           // "nvlink4-nvswitch", "nvlink2", "pcie3", "infiniband-ndr", ...
  double bandwidth_GBps = 0.0;  // nominal per-GPU, per direction; documentation only
  std::map<CollectiveKind, CurveReference> curves;
  std::string json_pointer;
};

struct PcieSwitch {
  std::string name;
  std::vector<int> gpus;
  std::string host_bridge;  // CPU socket / root complex it hangs off
};

struct NicSet {
  int count = 0;
  double rate_Gbps = 0.0;
  // The NIC's transport where it differs from the fabric its curves were measured on (cloud
  // NICs over TCP, EFA, RoCE): the NIC rate of the measured fabric (0 = rate_Gbps), this
  // transport's per-message network hop latency for NCCL's Simple protocol (0 = as measured)
  // and the fraction of its line rate it reaches relative to the measured fabric.
  double curves_rate_Gbps = 0.0;
  double hop_latency_us = 0.0;
  double bandwidth_efficiency = 1.0;
  // Added per remote peer of an all-to-all: NCCL posts one message per peer, and a transport
  // with a costly message (EFA's SRD, TCP) pays it for every peer (0 = as measured).
  double peer_latency_us = 0.0;
  // The fraction of the network bandwidth the ring reaches that NCCL's trees (tree, NVLS-tree)
  // reach across more than two nodes on this transport (1 = as the measured fabric). Two nodes
  // are one exchange and keep the tree's full rate.
  double tree_bandwidth_efficiency = 1.0;
  // The GPUs of the nodes the curves were measured on, where they differ from this node's (a
  // NIC class that borrows another GPU generation's sweeps): GPU model and NVLinks per GPU
  // ("" / 0 = this node's). The collective model carries those curves from a fabric built on
  // that GPU (its NVLS, its NVLink rate), so the measured node's NVLink ceiling is not
  // mistaken for this node's.
  std::string curves_gpu_model;
  int curves_nvlinks_per_gpu = 0;
  double measured_rate_Gbps() const {
    return curves_rate_Gbps > 0.0 ? curves_rate_Gbps : rate_Gbps;
  }
  std::vector<std::vector<int>> rails;  // per NIC: the local GPUs it serves
  std::string link_class;
  // NICs per node of the nodes the curves were measured on (0 = count; nic_sharing.hpp).
  int curves_nics_per_node = 0;
  int measured_count() const { return curves_nics_per_node > 0 ? curves_nics_per_node : count; }
};

struct NodeSpec {
  int gpus = 0;
  std::string gpu_model;
  IntraNodeFabric fabric = IntraNodeFabric::kPcie;
  std::string nvswitch_link_class;
  int nvlinks_per_gpu = 0;
  std::vector<std::vector<int>> nvlink_matrix;   // mesh: links between local GPUs i and j
  std::map<int, std::string> ring_link_classes;  // mesh: thinnest ring link count -> class
  std::string pcie_link_class;
  int pcie_generation = 0;
  std::vector<PcieSwitch> pcie_switches;
  PcieTransport pcie_transport;  // node/pcie/transport (pcie_transport.hpp)
  // CPU family ("intel-skylake", "intel-sapphire-rapids", "amd-zen3", "arm", ...; "" unknown):
  // sets the socket interconnect PCIe-only GPUs on different sockets talk through, and NCCL's
  // LL caps across nodes.
  std::string cpu;
  // The host bridge (CPU socket / root complex) of a local GPU's PCIe switch, "" if unlisted.
  std::string host_bridge_of(int local_gpu) const;
  std::optional<NicSet> nics;
};

// NCCL_ALGO / NCCL_PROTO-like restrictions ("ring,tree", "^nvls", "LL128,Simple"; "" = NCCL's
// own choice) and the channel count, as the cluster's jobs set them. Checked by the collective
// model (collectives/nccl_tuning.hpp), which owns the names.
struct NcclTopologySettings {
  std::string algorithms;
  std::string protocols;
  int channels = 0;  // 0 = the model's default
  // A tuner plugin (NCCL_TUNER_PLUGIN) that keeps all-reduce across nodes off the ring below
  // this many bytes per rank (the boundary grows with the rank count, as the ring's latency
  // does); 0 = NCCL's own choice at every size.
  double tuner_ring_from_bytes_per_rank = 0.0;
  // NCCL_MIN_CTAS / NCCL_MAX_CTAS: bounds on the channel count (one CTA per channel); 0 = unset.
  int min_ctas = 0;
  int max_ctas = 0;
};

// The inter-node fabric's two switch tiers (leaf_spine.hpp: schema, rules). Absent: a
// non-blocking fabric, as before.
struct LeafSpine {
  // Nodes one leaf switch serves: rail-optimized, NIC r of nodes g*n .. g*n+n-1 goes to leaf
  // (g, r); otherwise every NIC of those nodes goes to leaf g.
  int nodes_per_leaf = 0;
  bool rail_optimized = true;
  double oversubscription = 1.0;  // leaf downlink : uplink bandwidth (1 = non-blocking)
  std::string note;
  std::string json_pointer;
};

struct Topology {
  std::string source;  // file path, named in errors
  std::string name;
  std::string description;
  int nodes = 1;
  NodeSpec node;
  std::string network;  // inter-node fabric, e.g. "infiniband rail-optimized fat tree"
  std::optional<LeafSpine> leaf_spine;
  std::map<std::string, LinkClass> link_classes;
  NcclTopologySettings nccl;

  int world_size() const { return nodes * node.gpus; }
  int node_of(int global_rank) const { return global_rank / node.gpus; }
  int local_gpu_of(int global_rank) const { return global_rank % node.gpus; }
  // The NIC serving local GPU `gpu` (index into nics->rails), or -1.
  int nic_of(int local_gpu) const;
  const LinkClass& link_class(const std::string& name) const;  // RuntimeFailure when unknown
};

// Parses and checks a topology. Throws InputError(source, JSON pointer, problem) for invalid
// JSON, unknown or missing fields, wrong types, unknown GPU ids, an asymmetric NVLink matrix,
// GPUs served by no NIC on a multi-node cluster, a link class that is referenced but not
// defined, a link class without curves, and unknown collective names.
Topology parse_topology(std::string_view json_text, const std::string& source);
Topology load_topology(const std::string& path);

// The same cluster with `nodes` nodes (configs ship one-node files; N-node clusters reuse them).
Topology with_node_count(Topology topology, int nodes);

}  // namespace perfsim::topology
