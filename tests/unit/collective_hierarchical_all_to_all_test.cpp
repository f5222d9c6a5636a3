// DeepEP / HybridEP dispatch and combine (collectives/hierarchical_all_to_all.hpp): the bytes
// each link carries and the time on a hand-built H100 fabric, worked by hand.
#include <gtest/gtest.h>

#include "collectives/bus_factor.hpp"
#include "collectives/hierarchical_all_to_all.hpp"

namespace perfsim::collectives {
namespace {

// HGX H100: 18 NVLinks x 20.6 GB/s, 8 x 400 Gb/s NICs per node (50 GB/s each).
NcclFabric h100() {
  NcclFabric fabric;
  fabric.generation = GpuGeneration::kHopper;
  fabric.intra_busbw_GBps = 18 * 20.6;
  fabric.net_busbw_GBps = 400.0;
  return fabric;
}

TEST(HierarchicalAllToAll, LinkBytes) {
  // 8 ranks in one node: no network, 7/8 of the GPU-level copies leave the GPU over NVLink.
  const auto one_node = hierarchical_all_to_all_links(800, 1600, {8, 1});
  EXPECT_DOUBLE_EQ(one_node.network_bytes, 0.0);
  EXPECT_DOUBLE_EQ(one_node.nvlink_bytes, 1400.0);
  // 4 nodes of 8: 3/4 of the node-level copies cross the network.
  const auto four_nodes = hierarchical_all_to_all_links(800, 1600, {32, 4});
  EXPECT_DOUBLE_EQ(four_nodes.network_bytes, 600.0);
  EXPECT_DOUBLE_EQ(four_nodes.nvlink_bytes, 1400.0);
  // One rank per node: every GPU-level copy arrives where the network put it.
  EXPECT_DOUBLE_EQ(hierarchical_all_to_all_links(800, 1600, {4, 4}).nvlink_bytes, 0.0);
}

TEST(HierarchicalAllToAll, TimeIsTheSlowerPhasePlusLatency) {
  // 2 nodes of 8, 100 MB node-level and 200 MB GPU-level per rank: network 50 MB at 400/8 =
  // 50 GB/s = 1000 us; NVLink 175 MB at 370.8 GB/s = 471.9 us: the network sets the pace.
  // Latency: NCCL's Simple point-to-point base 8.4 us + one network hop 14 us, no per-peer cost.
  const auto across = hierarchical_all_to_all_estimate(100'000'000, 200'000'000, {16, 2}, h100());
  EXPECT_NEAR(across.latency_us, 8.4 + 14.0, 1e-9);
  EXPECT_NEAR(across.time_us - across.latency_us, 50e6 / (1e3 * 50.0), 1e-6);
  EXPECT_EQ(across.algorithm, NcclAlgorithm::kPointToPoint);
  // In one node: NVLink only, 175 MB at 370.8 GB/s; latency base + one NVLink hop (3.4 us).
  const auto inside = hierarchical_all_to_all_estimate(100'000'000, 200'000'000, {8, 1}, h100());
  EXPECT_NEAR(inside.latency_us, 8.4 + 3.4, 1e-9);
  EXPECT_NEAR(inside.time_us - inside.latency_us, 175e6 / (1e3 * 18 * 20.6), 1e-6);
  // The fabric's per-peer network cost applies once per remote node: 3 of them on 4 nodes.
  NcclFabric with_peer_cost = h100();
  with_peer_cost.peer_latency_us = 2.0;
  EXPECT_NEAR(hierarchical_all_to_all_estimate(8, 8, {32, 4}, with_peer_cost).latency_us,
              8.4 + 14.0 + 3 * 2.0, 1e-9);
  EXPECT_EQ(hierarchical_all_to_all_estimate(8, 8, {1, 1}, h100()).time_us, 0.0);
}

TEST(HierarchicalAllToAll, FewerNetworkBytesThanTheAllToAllForTopKAboveOne) {
  // DeepSeek-V3-like: T = 4096 tokens, h = 7168 bf16, top-8 of 256 experts on EP 64 (8 nodes,
  // 4 experts a GPU, 32 a node). The alltoall dispatcher sends T x 8 rows, 56/64 of them to
  // other nodes; the hierarchical one T x (expected distinct nodes) rows, 7/8 of them remote.
  // Distinct nodes per token: 8 x (1 - C(224, 8) / C(256, 8)) = 5.2947 (by hand).
  const double row = 7168 * 2;
  const double all_to_all_net = 4096 * 8 * row * 56.0 / 64.0;
  const double distinct_nodes = 5.2947;
  const auto links = hierarchical_all_to_all_links(static_cast<Bytes>(4096 * distinct_nodes * row),
                                                   static_cast<Bytes>(4096 * 7.0 * row), {64, 8});
  EXPECT_LT(links.network_bytes, all_to_all_net * 0.7);
  // The model's message size for the kind is the larger of the two volumes.
  CommInfo comm;
  comm.kind = CollectiveKind::kHierarchicalAllToAll;
  comm.bytes_in = 100;
  comm.bytes_out = 300;
  EXPECT_EQ(model_message_bytes(comm), 300);
}

}  // namespace
}  // namespace perfsim::collectives
