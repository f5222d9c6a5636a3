#include "collectives/nccl_tuning.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

#include "collectives/ring_pipeline.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

constexpr int kRing = 0, kTree = 1, kNvls = 2, kNvlsTree = 3;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kHwNvlink = 0, kHwPcie = 1, kHwNet = 2;

// NCCL's default tuner constants (tuning.cc, NCCL 2.2x), microseconds, [algorithm][protocol].
constexpr double kBaseLatency_us[4][3] = {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}};
constexpr double kHopLatency_us[3][4][3] = {
    {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0, 0, 25}, {0, 0, 25}},  // NVLink
    {{1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}, {0, 0, 0}, {0, 0, 0}},     // PCIe
    {{2.7, 4.0, 14}, {5.0, 8.5, 14}, {0, 0, 18}, {0, 0, 14}},     // network
};
// Caps, GB/s: LL per node ([single node by GPU | Intel | AMD][1, 2, >2 nodes]) and per channel
// by GPU generation [Volta, Ampere, Hopper, Blackwell][1, 2, >2 nodes].
constexpr double kLLMaxSingleNode_GBps[4] = {39.0, 87.7, 141.0, 282.0};
constexpr double kLLMaxMultiNode_GBps[2][2] = {{39.0, 20.4}, {22.5, 19.0}};  // [Intel|AMD][2|>2]
constexpr double kRingLL128PerChannel_GBps[4] = {20.0, 20.0, 36.7, 73.4};
constexpr double kTreeLL128PerChannel_GBps[4][3] = {
    {20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kTreePerChannel_GBps[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kNvlsTreePerChannel_GBps[4][3] = {
    {0, 18.5, 10.0}, {0, 23.6, 17.8}, {0, 57.7, 45.5}, {0, 96.0, 43.1}};
// Tree all-reduce bandwidth corrections for medium sizes, powers of two from 64 B (NCCL's
// treeCorrectionFactor): the tree does not pipeline as the model assumes there.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

int floor_log2(double value) {
  int result = 0;
  while (value >= 2.0) {
    value /= 2.0;
    ++result;
  }
  return result;
}

int ring_steps(CollectiveKind kind, int n_ranks) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * (n_ranks - 1);
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return n_ranks - 1;
    default:
      return n_ranks;
  }
}

bool is_tuned_collective(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllGather ||
         kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kBroadcast ||
         kind == CollectiveKind::kReduce;
}

// Which algorithms NCCL runs for a collective on a fabric (before user restrictions).
bool algorithm_supported(CollectiveKind kind, int algorithm, const CommShape& shape,
                         const NcclFabric& fabric) {
  if (kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kReduce)
    return algorithm == kRing;
  const bool nvls_ok = fabric.nvls && fabric.nvls_busbw_GBps > 0.0 && shape.ranks_per_node() > 1;
  if (kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter)
    return algorithm == kRing || (algorithm == kNvls && nvls_ok && shape.n_nodes == 1);
  // all-reduce: NVLS across nodes needs CollNet (SHARP switches), not modeled; NVLS-tree needs
  // more than one node.
  if (algorithm == kNvls)
    return nvls_ok && shape.n_nodes == 1;
  if (algorithm == kNvlsTree)
    return nvls_ok && shape.n_nodes > 1;
  return true;
}

// The per-GPU rate inside a PCIe-only node under SHM (pcie_path.hpp): GPUs sending at once
// through one switch uplink share it, and a GPU that also receives keeps the duplex
// efficiency. Broadcast and reduce chains have n - 1 senders, and on two GPUs one only sends.
double shm_intra_GBps(CollectiveKind kind, int n_ranks, const NcclFabric& fabric) {
  if (fabric.shm_gpus_per_uplink <= 0)
    return fabric.intra_busbw_GBps;
  const bool chain = kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kReduce ||
                     kind == CollectiveKind::kSend || kind == CollectiveKind::kRecv;
  if (kind == CollectiveKind::kSend || kind == CollectiveKind::kRecv)
    n_ranks = 2;  // one sender, one receiver
  const int senders =
      chain ? std::min(fabric.shm_gpus_per_uplink, n_ranks - 1) : fabric.shm_gpus_per_uplink;
  const bool duplex = !(chain && n_ranks == 2);
  return fabric.intra_busbw_GBps / std::max(1, senders) *
         (duplex ? fabric.shm_duplex_efficiency : 1.0);
}

double bus_bandwidth_GBps(CollectiveKind kind, const CommShape& shape, const NcclFabric& fabric,
                          int algorithm, int protocol) {
  const int generation = static_cast<int>(fabric.generation);
  const int node_index = std::min(shape.n_nodes, 3) - 1;
  const double channels = fabric.channels;
  const double ppn = shape.ranks_per_node();
  // A tree over two nodes is one exchange between them: the two binary trees cross in opposite
  // directions, so each NIC carries half the reduction each way and the bus bandwidth reaches
  // twice the per-node net rate (NCCL's own advice: two-node all-reduce busbw exceeds the NICs
  // unless NCCL_ALGO=Ring; not from three nodes on).
  const double tree_net_factor = algorithm == kTree && shape.n_nodes <= 2 ? 2.0 : 1.0;
  const double intra_GBps = shm_intra_GBps(kind, shape.n_ranks, fabric);
  // Beyond two nodes a tree node forwards to a parent and two children; on some transports
  // (EFA) that reaches less of the line rate than the ring's one neighbour each way.
  const bool tree_family = algorithm == kTree || algorithm == kNvlsTree;
  const double net_GBps = fabric.net_busbw_GBps / fabric.spine_slowdown[algorithm] *
                          (tree_family && shape.n_nodes > 2 ? fabric.tree_net_efficiency : 1.0);
  double bw = shape.n_nodes == 1 ? intra_GBps : std::min(intra_GBps, net_GBps * tree_net_factor);
  if (algorithm == kNvls || algorithm == kNvlsTree) {
    if (protocol != kSimple)
      return 0.0;
    double nvls = fabric.nvls_busbw_GBps;
    if (kind != CollectiveKind::kAllReduce)
      nvls = nvls / 2.0 * (ppn - 1.0) / ppn;  // all-reduce pipelines two operations
    bw = nvls;
    if (algorithm == kNvlsTree) {
      // With two nodes each node exchanges with one peer only: twice the per-node net rate.
      const double net = net_GBps * (shape.n_nodes <= 2 ? 2.0 : 1.0);
      bw = std::min({nvls, net, channels * kNvlsTreePerChannel_GBps[generation][node_index]});
    }
  }
  const double ll_max = shape.n_nodes == 1
                            ? kLLMaxSingleNode_GBps[generation]
                            : kLLMaxMultiNode_GBps[fabric.amd_cpu ? 1 : 0][node_index - 1];
  if (algorithm == kRing && protocol == kLL)
    bw = std::min(ll_max, bw * 0.5);
  if (algorithm == kRing && protocol == kLL128)
    bw = std::min(bw * 0.92, channels * kRingLL128PerChannel_GBps[generation]);
  if (algorithm == kTree && kind == CollectiveKind::kAllReduce)
    bw = std::min(bw * 0.92, channels * kTreePerChannel_GBps[generation][node_index]);
  if (algorithm == kTree && protocol == kLL)
    bw = std::min(bw / 3.8, ll_max);
  if (algorithm == kTree && protocol == kLL128)
    bw = std::min(bw * (shape.n_nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                  channels * kTreeLL128PerChannel_GBps[generation][node_index]);
  return bw;
}

double latency_us(CollectiveKind kind, const CommShape& shape, const NcclFabric& fabric,
                  int algorithm, int protocol) {
  const int intra_hw = fabric.intra_nvlink ? kHwNvlink : kHwPcie;
  const int hw = shape.n_nodes == 1 ? intra_hw : kHwNet;
  const int ppn = shape.ranks_per_node();
  const int steps = ring_steps(kind, shape.n_ranks);
  // SHM hops (PCIe-only nodes without P2P on the path) also round-trip through host memory.
  const double shm_extra_us =
      fabric.shm_gpus_per_uplink > 0 ? fabric.shm_hop_extra_latency_us : 0.0;
  double intra = kHopLatency_us[intra_hw][algorithm][protocol] + shm_extra_us;
  // With one rank per node every hop crosses the network: NCCL then uses the tree's net latency.
  const double inter =
      fabric.net_latency_scale * kHopLatency_us[kHwNet][ppn == 1 ? kTree : algorithm][protocol];
  double latency = kBaseLatency_us[algorithm][protocol];
  switch (algorithm) {
    case kRing: {
      if (kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kReduce)
        return latency +
               (hw == kHwNet ? fabric.net_latency_scale : 1.0) *
                   kHopLatency_us[hw][kRing][protocol] +
               (hw == kHwNet ? 0.0 : shm_extra_us);
      if (shape.n_nodes > 1) {  // every step still posts a network operation
        const double net_overhead_us =
            (fabric.amd_cpu ? 2.0 : 1.0) * (protocol == kSimple ? 3.0 : 1.0);
        intra = std::max(intra, net_overhead_us);
      }
      const int inter_steps = shape.n_nodes == 1                   ? 0
                              : kind == CollectiveKind::kAllReduce ? 2 * (shape.n_nodes - 1)
                                                                   : shape.n_nodes - 1;
      return latency + (steps - inter_steps) * intra + inter_steps * inter;
    }
    case kTree:
      return latency + 2.0 * ((ppn - 1) * intra + floor_log2(shape.n_nodes) * inter);
    case kNvls:
      return intra + (shape.n_nodes > 1 ? inter : 0.0);
    case kNvlsTree:
      return latency + intra + 2.0 * floor_log2(shape.n_nodes) * inter;
    default:
      return latency;
  }
}

// All-to-all(v) and send/recv: NCCL's grouped point-to-point, not its tuner. Every rank sends
// (n-1)/n of its buffer, (ppn-1)/n to GPUs of its node over NVLink/PCIe and (n-ppn)/n through
// its share of the node's NICs; the two streams overlap, the slower sets the time. Latency: the
// Simple protocol's base plus one hop (network hop when any peer is on another node), plus the
// transport's per-message cost for each of the n - ppn peers on other nodes (all-to-all).
NcclEstimate p2p_estimate(CollectiveKind kind, double bytes, const CommShape& shape,
                          const NcclFabric& fabric) {
  NcclEstimate estimate;
  estimate.algorithm = NcclAlgorithm::kPointToPoint;
  estimate.protocol = NcclProtocol::kSimple;
  const int intra_hw = fabric.intra_nvlink ? kHwNvlink : kHwPcie;
  const bool crosses_nodes = shape.n_nodes > 1;
  estimate.latency_us =
      kBaseLatency_us[kRing][kSimple] +
      (crosses_nodes
           ? fabric.net_latency_scale * kHopLatency_us[kHwNet][kRing][kSimple]
           : kHopLatency_us[intra_hw][kRing][kSimple] +
                 (fabric.shm_gpus_per_uplink > 0 ? fabric.shm_hop_extra_latency_us : 0.0));
  const double ppn = shape.ranks_per_node();
  const double net_per_gpu_GBps =
      fabric.net_busbw_GBps / fabric.spine_slowdown[static_cast<int>(estimate.algorithm)] / ppn;
  double intra_bytes = 0.0;
  double inter_bytes = 0.0;
  if (kind == CollectiveKind::kSend || kind == CollectiveKind::kRecv) {
    (crosses_nodes ? inter_bytes : intra_bytes) = bytes;
  } else {
    const double n = shape.n_ranks;
    intra_bytes = bytes * (ppn - 1.0) / n;
    inter_bytes = bytes * (n - ppn) / n;
    estimate.latency_us += (n - ppn) * fabric.peer_latency_us;
  }
  const DurationUs transfer_us = std::max(
      intra_bytes > 0.0 ? intra_bytes / (1e3 * shm_intra_GBps(kind, shape.n_ranks, fabric)) : 0.0,
      inter_bytes > 0.0 ? inter_bytes / (1e3 * net_per_gpu_GBps) : 0.0);
  estimate.time_us = estimate.latency_us + transfer_us;
  estimate.tuner_time_us = estimate.time_us;
  estimate.algbw_GBps = transfer_us > 0.0 ? bytes / (1e3 * transfer_us) : 0.0;
  return estimate;
}

std::string lowercase(std::string text) {
  for (char& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

template <std::size_t N>
std::array<bool, N> parse_list(const std::string& text,
                               const std::array<std::string_view, N>& names,
                               const std::string& source, const std::string& location) {
  std::array<bool, N> enabled;
  enabled.fill(true);
  if (text.empty())
    return enabled;
  std::string list = lowercase(text);
  const bool negate = list.front() == '^';
  if (negate)
    list.erase(0, 1);
  enabled.fill(negate);
  std::stringstream stream(list);
  std::string item;
  while (std::getline(stream, item, ',')) {
    const auto it = std::find_if(names.begin(), names.end(), [&](std::string_view name) {
      return lowercase(std::string(name)) == item;
    });
    if (it == names.end())
      throw InputError(source, location, "unknown name '" + item + "' in '" + text + "'");
    enabled[static_cast<std::size_t>(it - names.begin())] = !negate;
  }
  if (std::none_of(enabled.begin(), enabled.end(), [](bool on) { return on; }))
    throw InputError(source, location, "'" + text + "' enables nothing");
  return enabled;
}

}  // namespace

std::string_view algorithm_name(NcclAlgorithm algorithm) {
  switch (algorithm) {
    case NcclAlgorithm::kRing:
      return "ring";
    case NcclAlgorithm::kTree:
      return "tree";
    case NcclAlgorithm::kNvls:
      return "nvls";
    case NcclAlgorithm::kNvlsTree:
      return "nvlstree";
    case NcclAlgorithm::kPointToPoint:
      return "p2p";
  }
  return "?";
}

std::string_view protocol_name(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::kLL:
      return "LL";
    case NcclProtocol::kLL128:
      return "LL128";
    case NcclProtocol::kSimple:
      return "Simple";
  }
  return "?";
}

NcclSettings parse_nccl_settings(const std::string& algorithms, const std::string& protocols,
                                 const std::string& source, const std::string& location) {
  NcclSettings settings;
  settings.algorithms = parse_list<kNcclAlgorithms>(
      algorithms, {"ring", "tree", "nvls", "nvlstree", "p2p"}, source, location + "/algo");
  settings.algorithms[static_cast<int>(NcclAlgorithm::kPointToPoint)] = true;
  settings.protocols =
      parse_list<kNcclProtocols>(protocols, {"LL", "LL128", "Simple"}, source, location + "/proto");
  settings.algorithm_text = algorithms;
  settings.protocol_text = protocols;
  return settings;
}

NcclEstimate nccl_pair_estimate(CollectiveKind kind, double bytes, const CommShape& shape,
                                const NcclFabric& fabric, NcclAlgorithm algorithm,
                                NcclProtocol protocol) {
  NcclEstimate estimate;
  estimate.algorithm = algorithm;
  estimate.protocol = protocol;
  const int a = static_cast<int>(algorithm);
  const int p = static_cast<int>(protocol);
  if (algorithm == NcclAlgorithm::kPointToPoint || !is_tuned_collective(kind) ||
      !algorithm_supported(kind, a, shape, fabric))
    return estimate;
  if (p == kLL128 && (!fabric.intra_nvlink || fabric.generation == GpuGeneration::kVolta))
    return estimate;  // NCCL enables LL128 only over NVLink on matching, recent GPUs
  const double busbw = bus_bandwidth_GBps(kind, shape, fabric, a, p);
  if (!(busbw > 0.0))
    return estimate;
  double latency = latency_us(kind, shape, fabric, a, p);
  double algbw = busbw;
  const bool nvls_gather = a == kNvls && kind != CollectiveKind::kAllReduce;
  if (!nvls_gather)
    algbw *=
        a == kTree ? 0.5 : static_cast<double>(shape.n_ranks) / ring_steps(kind, shape.n_ranks);
  const double chunks = bytes / 64.0;
  if (a == kTree && kind == CollectiveKind::kAllReduce && chunks >= 1.0) {
    const int log_size = floor_log2(chunks);
    if (log_size < 23)
      algbw *= kTreeCorrection[p][log_size];
  }
  if (a == kRing && p == kSimple && shape.n_nodes > 1 && kind == CollectiveKind::kAllReduce &&
      bytes / (fabric.channels * shape.n_ranks) >= 64.0)
    latency *= fabric.generation == GpuGeneration::kVolta ? 1.9 : 1.4;  // ring plateau effect
  estimate.latency_us = latency;
  estimate.algbw_GBps = algbw;
  estimate.tuner_time_us = latency + bytes / (1e3 * algbw);
  estimate.time_us = estimate.tuner_time_us;
  const bool ring_pattern = kind == CollectiveKind::kAllReduce ||
                            kind == CollectiveKind::kAllGather ||
                            kind == CollectiveKind::kReduceScatter;
  if (a == kRing && ring_pattern && bytes > 0.0) {
    // As NCCL executes it (ring_pipeline.hpp): its hop latencies per step, loop by loop.
    const int steps = ring_steps(kind, shape.n_ranks);
    const double base_us = kBaseLatency_us[kRing][p];
    const double busbw_GBps = algbw * steps / shape.n_ranks;
    estimate.time_us =
        ring_execution_us(ring_loops(bytes, shape.n_ranks, fabric.channels, protocol), steps,
                          fabric.channels, ring_slices_per_chunk(protocol), base_us,
                          std::max(0.0, latency - base_us) / steps, busbw_GBps);
    estimate.latency_us = std::max(0.0, estimate.time_us - bytes / (1e3 * algbw));
  }
  return estimate;
}

int NcclSettings::channels(int found) const {
  int channels = found;
  if (min_ctas > 0)
    channels = std::max(channels, min_ctas);
  if (max_ctas > 0)
    channels = std::min(channels, max_ctas);
  return std::max(1, channels);
}

NcclEstimate nccl_estimate(CollectiveKind kind, double bytes, const CommShape& shape,
                           const NcclFabric& fabric, const NcclSettings& settings) {
  if (shape.n_ranks <= 1 || kind == CollectiveKind::kBarrier)
    return {};
  if (!is_tuned_collective(kind))
    return p2p_estimate(kind, bytes, shape, fabric);
  if (settings.channels(fabric.channels) != fabric.channels) {
    NcclFabric clamped = fabric;
    clamped.channels = settings.channels(fabric.channels);
    return nccl_estimate(kind, bytes, shape, clamped, settings);
  }
  if (fabric.spine_binds()) {
    // NCCL chooses on its own view of the fabric (no spine), the spine then slows the choice.
    NcclFabric unaware = fabric;
    unaware.spine_slowdown.fill(1.0);
    const NcclEstimate chosen = nccl_estimate(kind, bytes, shape, unaware, settings);
    return nccl_pair_estimate(kind, bytes, shape, fabric, chosen.algorithm, chosen.protocol);
  }
  // A tuner plugin that keeps all-reduce across nodes off the ring below its boundary (bytes per
  // rank: the ring's latency grows with the ranks) chooses among the other algorithms there.
  const bool ring_held_back = kind == CollectiveKind::kAllReduce && shape.n_nodes > 1 &&
                              bytes < settings.tuner_ring_from_bytes_per_rank * shape.n_ranks;
  const auto cheapest = [&](bool allow_ring) {
    NcclEstimate best;
    best.tuner_time_us = std::numeric_limits<double>::infinity();
    for (int a = 0; a < 4; ++a) {
      if (!settings.algorithms[a] || (a == kRing && !allow_ring))
        continue;
      for (int p = 0; p < kNcclProtocols; ++p) {
        if (!settings.protocols[p])
          continue;
        const NcclEstimate candidate =
            nccl_pair_estimate(kind, bytes, shape, fabric, static_cast<NcclAlgorithm>(a),
                               static_cast<NcclProtocol>(p));
        if (candidate.algbw_GBps > 0.0 && candidate.tuner_time_us < best.tuner_time_us)
          best = candidate;
      }
    }
    return best;
  };
  NcclEstimate best = cheapest(!ring_held_back);
  if (ring_held_back && !std::isfinite(best.tuner_time_us))
    best = cheapest(true);  // nothing else enabled: the ring runs after all
  if (!std::isfinite(best.tuner_time_us))
    throw RuntimeFailure(std::string("NCCL settings (algo '") + settings.algorithm_text +
                         "', proto '" + settings.protocol_text + "') leave no algorithm for " +
                         std::string(collective_name(kind)));
  return best;
}

}  // namespace perfsim::collectives
