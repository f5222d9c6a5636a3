// Which link a collective loads comes from the topology (mpi_sim/engine/topology_link_sharing):
// groups inside a node the node's fabric, groups across nodes the NIC, sends and receives one
// direction each, one rank or a barrier nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "mpi_sim/engine/topology_link_sharing.hpp"

namespace perfsim::engine {
namespace {

collectives::CollectiveModel h100_two_nodes() {
  const auto path = std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/topologies/hgx-h100.json";
  auto topology = topology::with_node_count(topology::load_topology(path.string()), 2);
  collectives::CurveSet curves;
  for (const char* name : {"azure-ndh200v5-1node-allreduce-busbw", "h100-ib400-2node-allreduce"}) {
    const bool nic = std::string(name).starts_with("h100");
    curves.emplace(
        name, collectives::FittedCurve{name,
                                       CollectiveKind::kAllReduce,
                                       nic ? 16 : 8,
                                       nic ? 2 : 1,
                                       "",
                                       collectives::PiecewiseSigmoidModel::from_free_parameters(
                                           nic ? 1e4 : 1e5, 1e9, nic ? 26.0 : 30.0,
                                           nic ? 460.0 : 480.0, 24.0, nic ? 0.3 : 0.4),
                                       {}});
  }
  return collectives::CollectiveModel(topology, curves);
}

CommInfo comm_of(CollectiveKind kind, Bytes bytes) {
  CommInfo comm;
  comm.kind = kind;
  comm.bytes_in = bytes;
  comm.bytes_out = bytes;
  return comm;
}

TEST(TopologyLinkSharing, GroupsAcrossNodesLoadTheNicInsideANodeTheFabric) {
  const TopologyLinkSharing rule(h100_two_nodes());
  const std::vector<int> dp_pair{3, 11};  // GPU 3 of node 0 and node 1
  const std::vector<int> tp_group{0, 1, 2, 3, 4, 5, 6, 7};
  const LinkDemand dp = rule.demand(comm_of(CollectiveKind::kReduceScatter, 1 << 26), dp_pair);
  EXPECT_TRUE(dp.nic && dp.sends && dp.receives);
  const LinkDemand tp = rule.demand(comm_of(CollectiveKind::kAllGather, 1 << 26), tp_group);
  EXPECT_TRUE(!tp.nic && tp.sends && tp.receives);
  // A large transfer is mostly bandwidth, a tiny one mostly latency.
  EXPECT_LT(dp.latency_fraction, 0.1);
  EXPECT_GT(rule.demand(comm_of(CollectiveKind::kReduceScatter, 64), dp_pair).latency_fraction,
            0.5);
}

TEST(TopologyLinkSharing, SendAndReceiveLoadOneDirectionEach) {
  const TopologyLinkSharing rule(h100_two_nodes());
  const std::vector<int> stages{5, 13};
  const LinkDemand send = rule.demand(comm_of(CollectiveKind::kSend, 1 << 24), stages);
  const LinkDemand receive = rule.demand(comm_of(CollectiveKind::kRecv, 1 << 24), stages);
  EXPECT_TRUE(send.nic && send.sends && !send.receives);
  EXPECT_TRUE(receive.nic && !receive.sends && receive.receives);
  const std::vector<int> in_node{5, 6};
  EXPECT_FALSE(rule.demand(comm_of(CollectiveKind::kSend, 1 << 24), in_node).nic);
}

TEST(TopologyLinkSharing, OneRankAndBarriersLoadNothing) {
  const TopologyLinkSharing rule(h100_two_nodes());
  const std::vector<int> alone{4};
  const std::vector<int> pair{0, 8};
  EXPECT_FALSE(rule.demand(comm_of(CollectiveKind::kAllReduce, 1 << 20), alone).uses_links());
  EXPECT_FALSE(rule.demand(comm_of(CollectiveKind::kBarrier, 0), pair).uses_links());
}

}  // namespace
}  // namespace perfsim::engine
