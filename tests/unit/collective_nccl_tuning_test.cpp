// The NCCL algorithm model (collectives/nccl_tuning.hpp): which algorithm and protocol each
// collective gets by size, GPU count and node count, the latency structure (ring linear in
// ranks, tree logarithmic in nodes), the bandwidth bounds, and NCCL_ALGO / NCCL_PROTO-like
// restrictions. Expected values are worked by hand from NCCL's tuner constants (tuning.cc).
#include <gtest/gtest.h>

#include "collectives/bus_factor.hpp"
#include "collectives/nccl_tuning.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

// HGX H100: 18 NVLinks x 20.6 GB/s, NVLS at 2 x 0.85 of it, 8 x 400 Gb/s NICs per node.
NcclFabric h100() {
  NcclFabric fabric;
  fabric.generation = GpuGeneration::kHopper;
  fabric.nvls = true;
  fabric.intra_busbw_GBps = 18 * 20.6;
  fabric.nvls_busbw_GBps = 2 * 0.85 * fabric.intra_busbw_GBps;
  fabric.net_busbw_GBps = 400.0;
  return fabric;
}

NcclFabric pcie_box() {
  NcclFabric fabric;
  fabric.generation = GpuGeneration::kAmpere;
  fabric.intra_nvlink = false;
  fabric.intra_busbw_GBps = 24.0;
  return fabric;
}

constexpr double kSixteenGiB = 16.0 * (1ull << 30);

TEST(NcclTuning, AllReduceInOneNode) {
  const auto tiny = nccl_estimate(CollectiveKind::kAllReduce, 8, {8, 1}, h100());
  // Ring LL: 6.6 + 2(8-1) x 0.6 = 15.0 us, below tree LL 6.8 + 2 x 7 x 0.6 = 15.2 and NVLS 25.
  EXPECT_EQ(tiny.algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(tiny.protocol, NcclProtocol::kLL);
  EXPECT_DOUBLE_EQ(tiny.latency_us, 6.6 + 14 * 0.6);
  const auto huge = nccl_estimate(CollectiveKind::kAllReduce, kSixteenGiB, {8, 1}, h100());
  EXPECT_EQ(huge.algorithm, NcclAlgorithm::kNvls);
  EXPECT_EQ(huge.protocol, NcclProtocol::kSimple);
  // NVLS bus bandwidth converted to algorithm bandwidth by n / (2(n-1)).
  EXPECT_NEAR(huge.algbw_GBps, h100().nvls_busbw_GBps * 8 / 14, 1e-9);
  // Without NVLS hardware (A100 NVSwitch) the ring carries large messages.
  NcclFabric a100 = h100();
  a100.generation = GpuGeneration::kAmpere;
  a100.nvls = false;
  EXPECT_EQ(nccl_estimate(CollectiveKind::kAllReduce, kSixteenGiB, {8, 1}, a100).algorithm,
            NcclAlgorithm::kRing);
}

TEST(NcclTuning, AllReduceAcrossNodes) {
  const auto two = nccl_estimate(CollectiveKind::kAllReduce, 8, {16, 2}, h100());
  // Tree LL: 6.8 + 2 (7 x 0.6 + log2(2) x 5.0) = 25.2 us; ring LL posts 30 steps, 2 on the net.
  EXPECT_EQ(two.algorithm, NcclAlgorithm::kTree);
  EXPECT_EQ(two.protocol, NcclProtocol::kLL);
  EXPECT_NEAR(two.latency_us, 25.2, 1e-9);
  // Four nodes: one more tree level, two more network hops: 35.2 us.
  const auto four = nccl_estimate(CollectiveKind::kAllReduce, 8, {32, 4}, h100());
  EXPECT_NEAR(four.latency_us, 35.2, 1e-9);
  // Large: NVLS inside nodes, tree across: bounded by NVLS at 2 nodes, by the NICs beyond.
  const auto large2 = nccl_estimate(CollectiveKind::kAllReduce, kSixteenGiB, {16, 2}, h100());
  const auto large8 = nccl_estimate(CollectiveKind::kAllReduce, kSixteenGiB, {64, 8}, h100());
  EXPECT_EQ(large2.algorithm, NcclAlgorithm::kNvlsTree);
  EXPECT_EQ(large8.algorithm, NcclAlgorithm::kNvlsTree);
  EXPECT_NEAR(large2.algbw_GBps * bus_factor(CollectiveKind::kAllReduce, 16),
              h100().nvls_busbw_GBps, 1e-6);
  EXPECT_NEAR(large8.algbw_GBps * bus_factor(CollectiveKind::kAllReduce, 64), 400.0, 1e-6);
}

// Two nodes: the tree is one exchange between them, so its bus bandwidth reaches twice the
// per-node NIC rate (NCCL: two-node all-reduce busbw exceeds the NICs unless NCCL_ALGO=Ring);
// from three nodes on the NICs bound it. A100 NVSwitch (no NVLS) with 8 x 200 Gb/s NICs.
TEST(NcclTuning, TwoNodeTreeReachesTwiceTheNicRate) {
  NcclFabric a100 = h100();
  a100.generation = GpuGeneration::kAmpere;
  a100.nvls = false;
  a100.intra_busbw_GBps = 240.0;
  a100.net_busbw_GBps = 200.0;
  const auto busbw_GBps = [&](const NcclEstimate& estimate, int ranks) {
    return estimate.algbw_GBps * bus_factor(CollectiveKind::kAllReduce, ranks);
  };
  const auto two = nccl_estimate(CollectiveKind::kAllReduce, kSixteenGiB, {16, 2}, a100);
  EXPECT_EQ(two.algorithm, NcclAlgorithm::kTree);
  // Tree bus bandwidth min(intra 240, 2 x 200) x 0.92, algorithm bandwidth half of it; as
  // nccl-tests reports it (x 2(n-1)/n) 207 GB/s: above the NICs' 200.
  EXPECT_NEAR(busbw_GBps(two, 16), 0.92 * 240.0 / 2.0 * bus_factor(CollectiveKind::kAllReduce, 16),
              1e-6);
  EXPECT_GT(busbw_GBps(two, 16), 200.0);
  const auto four = nccl_estimate(CollectiveKind::kAllReduce, kSixteenGiB, {32, 4}, a100);
  EXPECT_LE(busbw_GBps(four, 32), 200.0 + 1e-6);
}

TEST(NcclTuning, RingLatencyLinearInRanksTreeLogarithmicInNodes) {
  const NcclSettings ring = parse_nccl_settings("ring", "LL", "test", "");
  const NcclSettings tree = parse_nccl_settings("tree", "LL", "test", "");
  double previous = 0.0;
  for (int nodes : {2, 4, 8, 16, 32}) {
    const CommShape shape{8 * nodes, nodes};
    const double ring_us =
        nccl_estimate(CollectiveKind::kAllReduce, 8, shape, h100(), ring).latency_us;
    // 2(n-1) steps, 2(N-1) of them on the network (2.7 us), the others 1 us of net overhead.
    const int steps = 2 * (8 * nodes - 1);
    const int net_steps = 2 * (nodes - 1);
    EXPECT_NEAR(ring_us, 6.6 + (steps - net_steps) * 1.0 + net_steps * 2.7, 1e-9) << nodes;
    const double tree_us =
        nccl_estimate(CollectiveKind::kAllReduce, 8, shape, h100(), tree).latency_us;
    if (previous > 0.0) {
      EXPECT_NEAR(tree_us - previous, 2 * 5.0, 1e-9) << nodes;  // one level per doubling
    }
    previous = tree_us;
  }
}

TEST(NcclTuning, EveryCollectiveGetsItsAlgorithms) {
  for (auto kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    // Across nodes only the ring (NVLS gathers across nodes need SHARP switches).
    for (double bytes : {8.0, 1e6, kSixteenGiB})
      EXPECT_EQ(nccl_estimate(kind, bytes, {16, 2}, h100()).algorithm, NcclAlgorithm::kRing);
    // In one node NVLS gathers exist but at half the all-reduce NVLS rate x (n-1)/n: the ring
    // (370.8 GB/s) beats them (630.4 / 2 x 7/8 = 275.8 GB/s).
    EXPECT_EQ(nccl_estimate(kind, kSixteenGiB, {8, 1}, h100()).algorithm, NcclAlgorithm::kRing);
    EXPECT_THROW(nccl_estimate(kind, 8, {16, 2}, h100(), parse_nccl_settings("tree", "", "t", "")),
                 RuntimeFailure);
  }
  for (auto kind : {CollectiveKind::kBroadcast, CollectiveKind::kReduce}) {
    const auto estimate = nccl_estimate(kind, 8, {16, 2}, h100());
    EXPECT_EQ(estimate.algorithm, NcclAlgorithm::kRing);
    // A pipelined chain: base + one network hop, whatever the ranks.
    EXPECT_NEAR(estimate.latency_us, 6.6 + 2.7, 1e-9);
  }
  for (auto kind : {CollectiveKind::kAllToAll, CollectiveKind::kAllToAllv, CollectiveKind::kSend,
                    CollectiveKind::kRecv}) {
    EXPECT_EQ(nccl_estimate(kind, 1e6, {16, 2}, h100()).algorithm, NcclAlgorithm::kPointToPoint);
  }
  // All-to-all across 2 nodes of 8: half of each rank's buffer leaves through its 50 GB/s NIC
  // share, 7/16 goes over NVLink: the NIC sets the time.
  const auto a2a = nccl_estimate(CollectiveKind::kAllToAll, kSixteenGiB, {16, 2}, h100());
  EXPECT_NEAR(a2a.time_us - a2a.latency_us, kSixteenGiB * 0.5 / (1e3 * 50.0), 1e-6);
  // A send across nodes runs at the NIC its GPU uses (the group's fabric has that one NIC per
  // node); in a node at NVLink rate.
  NcclFabric one_nic = h100();
  one_nic.net_busbw_GBps = 50.0;
  const auto send_net = nccl_estimate(CollectiveKind::kSend, kSixteenGiB, {2, 2}, one_nic);
  EXPECT_NEAR(send_net.time_us - send_net.latency_us, kSixteenGiB / (1e3 * 50.0), 1e-6);
  const auto send_nvlink = nccl_estimate(CollectiveKind::kSend, kSixteenGiB, {2, 1}, h100());
  EXPECT_GT(send_net.time_us, send_nvlink.time_us);
  EXPECT_EQ(nccl_estimate(CollectiveKind::kAllReduce, 1e6, {1, 1}, h100()).time_us, 0.0);
}

TEST(NcclTuning, BusBandwidthIsComparableAcrossCollectives) {
  // Forced ring + Simple in one node: every collective's nccl-tests bus bandwidth
  // (bytes x bus factor / time) tends to the ring's bus bandwidth: the bus factors of
  // nccl-tests PERFORMANCE.md undo each algorithm's n / steps.
  const NcclSettings ring_simple = parse_nccl_settings("ring", "Simple", "t", "");
  for (auto kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
        CollectiveKind::kBroadcast, CollectiveKind::kReduce}) {
    const auto estimate = nccl_estimate(kind, kSixteenGiB, {8, 1}, h100(), ring_simple);
    const double busbw = kSixteenGiB * bus_factor(kind, 8) / (1e3 * estimate.time_us);
    EXPECT_NEAR(busbw, h100().intra_busbw_GBps, 0.001 * h100().intra_busbw_GBps)
        << collective_name(kind);
  }
}

TEST(NcclTuning, ProtocolsFollowTheHardware) {
  // PCIe only: no LL128 at any size; LL for tiny, Simple for large.
  for (double bytes = 8; bytes <= kSixteenGiB; bytes *= 4)
    EXPECT_NE(nccl_estimate(CollectiveKind::kAllReduce, bytes, {4, 1}, pcie_box()).protocol,
              NcclProtocol::kLL128);
  EXPECT_EQ(nccl_estimate(CollectiveKind::kAllReduce, 8, {4, 1}, pcie_box()).protocol,
            NcclProtocol::kLL);
  EXPECT_EQ(nccl_estimate(CollectiveKind::kAllReduce, kSixteenGiB, {4, 1}, pcie_box()).protocol,
            NcclProtocol::kSimple);
  // Medium sizes on NVLink: LL128 between LL and Simple (ring, 8 GPUs, no NVLS).
  NcclFabric a100 = h100();
  a100.generation = GpuGeneration::kAmpere;
  a100.nvls = false;
  a100.intra_busbw_GBps = 240.0;
  bool saw_ll128 = false;
  for (double bytes = 8; bytes <= kSixteenGiB; bytes *= 2)
    saw_ll128 |= nccl_estimate(CollectiveKind::kAllReduce, bytes, {8, 1}, a100).protocol ==
                 NcclProtocol::kLL128;
  EXPECT_TRUE(saw_ll128);
}

TEST(NcclTuning, SettingsParseLikeNcclEnvironment) {
  const auto only_ring = parse_nccl_settings("Ring", "", "file", "/nccl");
  EXPECT_TRUE(only_ring.algorithms[static_cast<int>(NcclAlgorithm::kRing)]);
  EXPECT_FALSE(only_ring.algorithms[static_cast<int>(NcclAlgorithm::kTree)]);
  const auto no_ll = parse_nccl_settings("", "^LL", "file", "/nccl");
  EXPECT_FALSE(no_ll.protocols[static_cast<int>(NcclProtocol::kLL)]);
  EXPECT_TRUE(no_ll.protocols[static_cast<int>(NcclProtocol::kLL128)]);
  for (double bytes = 8; bytes <= kSixteenGiB; bytes *= 8)
    EXPECT_NE(nccl_estimate(CollectiveKind::kAllReduce, bytes, {16, 2}, h100(), no_ll).protocol,
              NcclProtocol::kLL);
  EXPECT_THROW(parse_nccl_settings("ring,mesh", "", "file", "/nccl"), InputError);
  EXPECT_THROW(parse_nccl_settings("", "^LL,LL128,Simple", "file", "/nccl"), InputError);
  try {
    parse_nccl_settings("", "LL256", "topo.json", "/nccl");
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "topo.json");
    EXPECT_EQ(error.location(), "/nccl/proto");
  }
}

}  // namespace
}  // namespace perfsim::collectives
