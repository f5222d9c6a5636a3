// Contention between concurrent collectives (collectives/contention.hpp): shared NICs and
// NVLink ports split bandwidth; disjoint ones do not.
#include <gtest/gtest.h>

#include <filesystem>

#include "collectives/contention.hpp"

namespace perfsim::collectives {
namespace {

CollectiveModel h100_two_nodes() {
  const auto path = std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/topologies/hgx-h100.json";
  auto topology = topology::with_node_count(topology::load_topology(path.string()), 2);
  CurveSet curves;
  curves.emplace(
      "azure-ndh200v5-1node-allreduce-busbw",
      FittedCurve{"azure-ndh200v5-1node-allreduce-busbw",
                  CollectiveKind::kAllReduce,
                  8,
                  1,
                  "",
                  PiecewiseSigmoidModel::from_free_parameters(1e5, 1e9, 30.0, 480.0, 24.0, 0.4),
                  {}});
  curves.emplace(
      "h100-ib400-2node-allreduce",
      FittedCurve{"h100-ib400-2node-allreduce",
                  CollectiveKind::kAllReduce,
                  16,
                  2,
                  "",
                  PiecewiseSigmoidModel::from_free_parameters(1e4, 1e9, 26.0, 460.0, 24.0, 0.3),
                  {}});
  return CollectiveModel(topology, curves);
}

TEST(Contention, LinksFollowRailsAndGpus) {
  const auto model = h100_two_nodes();
  // DP pair of GPU 3 on both nodes: rail 3 on each node, no NVLink peer.
  EXPECT_EQ(links_used(model.topology(), std::vector<int>{3, 11}),
            (std::set<std::string>{"nic:0:3", "nic:1:3"}));
  // TP group of node 0: NVLink ports only.
  const auto tp = links_used(model.topology(), std::vector<int>{0, 1, 2, 3});
  EXPECT_EQ(tp.size(), 4u);
  EXPECT_TRUE(tp.count("nvlink:0:3"));
}

TEST(Contention, SharedRailSplitsBandwidthDisjointRailsDoNot) {
  const auto model = h100_two_nodes();
  const Bytes large = Bytes{1} << 30;
  const ConcurrentCollective dp3{CollectiveKind::kAllReduce, large, {3, 11}};
  const ConcurrentCollective pp3{CollectiveKind::kSend, large, {3, 11}};
  const ConcurrentCollective dp4{CollectiveKind::kAllReduce, large, {4, 12}};
  const double alone = contended_durations_us(model, std::vector{dp3})[0];
  const auto same_rail = contended_durations_us(model, std::vector{dp3, pp3});
  const auto other_rail = contended_durations_us(model, std::vector{dp3, dp4});
  EXPECT_DOUBLE_EQ(other_rail[0], alone);
  // Two flows on rail 3: the transfer part doubles, the latency does not.
  const auto prediction = model.predict(CollectiveKind::kAllReduce, large, std::vector<int>{3, 11});
  const double latency_us = alone * prediction.nccl.latency_us / prediction.nccl.time_us;
  EXPECT_NEAR(same_rail[0], latency_us + 2 * (alone - latency_us), 1e-9);
  EXPECT_GT(same_rail[1], contended_durations_us(model, std::vector{pp3})[0]);
}

TEST(Contention, NvlinkGroupsOnDisjointGpusDoNotMeet) {
  const auto model = h100_two_nodes();
  const Bytes bytes = Bytes{1} << 28;
  const ConcurrentCollective tp_a{CollectiveKind::kAllGather, bytes, {0, 1, 2, 3}};
  const ConcurrentCollective tp_b{CollectiveKind::kAllGather, bytes, {4, 5, 6, 7}};
  const ConcurrentCollective cp{CollectiveKind::kAllGather, bytes, {0, 1}};
  const double alone = contended_durations_us(model, std::vector{tp_a})[0];
  EXPECT_DOUBLE_EQ(contended_durations_us(model, std::vector{tp_a, tp_b})[0], alone);
  EXPECT_GT(contended_durations_us(model, std::vector{tp_a, cp})[0], 1.5 * alone);
}

}  // namespace
}  // namespace perfsim::collectives
