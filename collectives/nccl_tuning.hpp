#pragma once
// NCCL's cost model for choosing an algorithm and a protocol (src/graph/tuning.cc of NCCL 2.2x,
// read for its rules; this is our own code): every (algorithm, protocol) pair gets a latency
// and a bus bandwidth from the fabric, a collective of B bytes costs
//   time = latency + B / algorithm bandwidth,
// and the cheapest enabled pair runs. Algorithms: ring, tree (double binary tree across nodes,
// chain inside one), NVLS (NVSwitch multicast, one node) and NVLS-tree (NVLS inside nodes, tree
// across them). Protocols: LL (8-byte flag+data stores, lowest latency, a quarter to half the
// bandwidth), LL128 (128-byte lines, NVLink only), Simple (full bandwidth, highest latency).
//
// Latency structure (NCCL hwLat/baseLat tables, microseconds):
//   ring:  base + (steps - inter_steps) x intra_hop + inter_steps x net_hop, steps = 2(n-1)
//          for all-reduce, n-1 all-gather / reduce-scatter, n broadcast / reduce; inter_steps
//          2(N-1) (all-reduce) or N-1 for N nodes: linear in ranks.
//   tree:  base + 2 (ppn-1) intra_hop + 2 log2(N) net_hop: logarithmic in nodes.
//   NVLS:  intra_hop;  NVLS-tree: intra_hop + 2 log2(N) net_hop.
// Bandwidth structure (nccl-tests bus bandwidth, GB/s):
//   ring:  min(intra, net per node) (one node: intra), LL x 1/2 capped, LL128 x 0.92;
//   tree:  0.92 x min(intra, net), LL x 1/3.8 capped, LL128 x 120/128 (7/9 in one node);
//   NVLS:  the NVLS bus bandwidth (all-reduce), x (ppn-1)/ppn for all-gather/reduce-scatter;
//   NVLS-tree: min(NVLS, net x 2 for 2 nodes (each node talks to one peer), net beyond 2).
// Bus bandwidth becomes algorithm bandwidth with n/steps (ring, NVLS) or 1/2 (tree): the
// nccl-tests bus factors (bus_factor.hpp) undo it, so busbw is comparable across algorithms.
// All-to-all(v) and send/recv do not go through NCCL's tuner: they are modeled as point-to-point
// transfers (see p2p_estimate in the .cpp).
#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "perfsim/comm.hpp"
#include "perfsim/units.hpp"

namespace perfsim::collectives {

enum class NcclAlgorithm { kRing, kTree, kNvls, kNvlsTree, kPointToPoint };
enum class NcclProtocol { kLL, kLL128, kSimple };
inline constexpr int kNcclAlgorithms = 5;
inline constexpr int kNcclProtocols = 3;

std::string_view algorithm_name(NcclAlgorithm algorithm);
std::string_view protocol_name(NcclProtocol protocol);

enum class GpuGeneration { kVolta, kAmpere, kHopper, kBlackwell };

// What the tuner needs to know about the hardware under a communicator. Bandwidths are bus
// bandwidths (nccl-tests convention) of the whole node, all channels together.
struct NcclFabric {
  GpuGeneration generation = GpuGeneration::kAmpere;
  bool intra_nvlink = true;        // NVLink/NVSwitch between GPUs (else PCIe: no LL128)
  bool nvls = false;               // NVSwitch with multicast (Hopper and later)
  bool amd_cpu = false;            // LL bandwidth caps depend on the CPU across nodes
  double intra_busbw_GBps = 0.0;   // ring inside a node
  double nvls_busbw_GBps = 0.0;    // NVLS all-reduce inside a node (0 = no NVLS)
  double net_busbw_GBps = 0.0;     // per node: the NICs a group's GPUs use, together
  double net_latency_scale = 1.0;  // multiplies NCCL's network hop latencies (fitted)
  double peer_latency_us = 0.0;    // all-to-all: added per peer on another node (transport)
  // Tree and NVLS-tree across more than two nodes: the fraction of net_busbw_GBps they reach
  // (transport; 1 = the ring's rate, as NCCL's tuner assumes).
  double tree_net_efficiency = 1.0;
  int channels = 16;  // caps that NCCL gives per channel
  // PCIe-only node under NCCL's SHM transport (pcie_path.hpp): the most of the group's GPUs
  // sharing one switch uplink (0 = P2P or NVLink: no sharing), and the fraction of the one-way
  // rate a GPU keeps while it both writes to and reads from host memory.
  int shm_gpus_per_uplink = 0;
  double shm_duplex_efficiency = 1.0;
  double shm_hop_extra_latency_us = 0.0;  // added to NCCL's PCIe hop latency under SHM
  // Oversubscribed leaf/spine (collectives/spine_traffic.hpp): per algorithm, how much slower
  // than net_busbw_GBps the group's network traffic runs (1 = the spine keeps up). NCCL's tuner
  // does not know the spine: nccl_estimate chooses as if all were 1 and prices the choice
  // with them.
  std::array<double, kNcclAlgorithms> spine_slowdown{1.0, 1.0, 1.0, 1.0, 1.0};
  bool spine_binds() const {
    return std::any_of(spine_slowdown.begin(), spine_slowdown.end(),
                       [](double slowdown) { return slowdown != 1.0; });
  }
};

// NCCL_ALGO / NCCL_PROTO-like restrictions. Parsed from "ring,tree", "^nvls" (all but),
// "LL128,Simple"; empty = all enabled. Names are case-insensitive.
struct NcclSettings {
  std::array<bool, kNcclAlgorithms> algorithms{true, true, true, true, true};
  std::array<bool, kNcclProtocols> protocols{true, true, true};
  std::string algorithm_text;  // as given, for output
  std::string protocol_text;
  // A tuner plugin's rule: all-reduce across nodes stays off the ring below this many bytes per
  // rank while another algorithm is enabled (0 = NCCL's own choice).
  double tuner_ring_from_bytes_per_rank = 0.0;
  // NCCL_MIN_CTAS / NCCL_MAX_CTAS (NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS before 2.17): NCCL
  // clamps the channel count its topology search found (NcclFabric::channels) to these, one CTA
  // per channel. 0 = not set.
  int min_ctas = 0;
  int max_ctas = 0;
  int channels(int found) const;
};
// Throws InputError(source, location, ...) for an unknown name or a list that enables nothing.
NcclSettings parse_nccl_settings(const std::string& algorithms, const std::string& protocols,
                                 const std::string& source, const std::string& location);

struct CommShape {
  int n_ranks = 1;
  int n_nodes = 1;
  int ranks_per_node() const { return n_ranks / n_nodes; }
};

struct NcclEstimate {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  DurationUs latency_us = 0.0;
  BandwidthGBps algbw_GBps = 0.0;  // bytes / (time - latency)
  DurationUs time_us = 0.0;        // as the collective executes (ring: ring_pipeline.hpp)
  DurationUs tuner_time_us = 0.0;  // NCCL's own cost, latency + bytes / algbw: what it chooses by
};

// Latency and bandwidth of one (algorithm, protocol) for `kind` on `shape`; algbw 0 when NCCL
// would not run that pair (e.g. tree for all-gather, NVLS without NVLS hardware).
NcclEstimate nccl_pair_estimate(CollectiveKind kind, double bytes, const CommShape& shape,
                                const NcclFabric& fabric, NcclAlgorithm algorithm,
                                NcclProtocol protocol);

// The pair NCCL's cost (tuner_time_us) finds cheapest among the enabled ones, priced as it
// executes (time_us; latency_us is then time minus the bandwidth term); `bytes` in the
// nccl-tests size convention (bus_factor.hpp). The settings' CTA bounds set the channel count.
// A group of one rank costs 0. Throws RuntimeFailure when the settings leave no usable pair.
NcclEstimate nccl_estimate(CollectiveKind kind, double bytes, const CommShape& shape,
                           const NcclFabric& fabric, const NcclSettings& settings = {});

}  // namespace perfsim::collectives
