// GPUs sharing one NIC (topology/nic_sharing.hpp): the schema (rails split evenly when left out,
// the NIC count the curves were measured on), the collective cost of a ring over fewer NICs,
// and the engine's NIC sharing between a group and the copies of the GPUs behind its NICs
// outside it (LinkDemand::nic_copies). Every expected figure is worked out by hand.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "collectives/collective_model.hpp"
#include "collectives/nccl_fabric.hpp"
#include "generators/llm/nominal_collective_curves.hpp"
#include "mpi_sim/engine/link_occupancy.hpp"
#include "mpi_sim/engine/topology_link_sharing.hpp"
#include "perfsim/error.hpp"
#include "topology/nic_sharing.hpp"
#include "topology/topology.hpp"

namespace perfsim {
namespace {

topology::Topology load(const std::string& name) {
  return topology::load_topology(
      (std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/topologies" / name).string());
}

// 4 NICs for 8 GPUs, curves of 8-NIC nodes; and the same nodes with one NIC per GPU.
topology::Topology four_nics() {
  return load("hgx-h100-4nic-2node.json");
}
topology::Topology eight_nics() {
  return load("hgx-h100-2node.json");
}

std::string with_nics(const std::string& nics_json) {
  return R"({"name": "t", "nodes": 2,
    "node": {"gpus": 8, "fabric": {"type": "nvswitch", "nvlinks_per_gpu": 18, "link_class": "nv"},
             "pcie": {"generation": 5, "link_class": "nv"}, "nics": )" +
         nics_json + R"(},
    "link_classes": {"nv": {"medium": "nvlink4", "curves": {"all_reduce": {"asset": "a"}}},
                     "ib": {"medium": "ib", "curves": {"all_reduce": {"asset": "b"}}}}})";
}

// A topology whose node has these NICs is refused with an error that says `message`.
void expect_nics_refused(const std::string& nics_json, const std::string& message) {
  std::string error;
  try {
    topology::parse_topology(with_nics(nics_json), "t.json");
  } catch (const InputError& refused) {
    error = refused.what();
  }
  EXPECT_NE(error.find(message), std::string::npos) << error;
}

TEST(NicSharingSchema, RailsLeftOutSplitTheGpusEvenlyInOrder) {
  const topology::Topology topology = four_nics();
  ASSERT_TRUE(topology.node.nics);
  const std::vector<std::vector<int>> rails{{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  EXPECT_EQ(topology.node.nics->rails, rails);
  EXPECT_EQ(topology.nic_of(5), 2);
  EXPECT_EQ(topology.node.nics->measured_count(), 8);
  const topology::Topology one_nic = topology::parse_topology(
      with_nics(R"({"count": 1, "rate_Gbps": 400, "link_class": "ib"})"), "t.json");
  EXPECT_EQ(one_nic.node.nics->rails, (std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(one_nic.node.nics->measured_count(), 1);  // its curves: measured on this node
}

TEST(NicSharingSchema, ClearErrors) {
  const std::string four_nics_json = R"("count": 4, "rate_Gbps": 400, "link_class": "ib")";
  expect_nics_refused(R"({"count": 3, "rate_Gbps": 400, "link_class": "ib"})",
                      "t.json: /node/nics/count: 8 GPUs do not split evenly over 3 NICs");
  expect_nics_refused("{" + four_nics_json + R"(, "curves_nics_per_node": 0})",
                      "/node/nics/curves_nics_per_node: must be at least 1");
  expect_nics_refused("{" + four_nics_json + R"(, "curves_nics_per_node": "8"})",
                      "/node/nics/curves_nics_per_node: expected an integer");
  expect_nics_refused("{" + four_nics_json + R"(, "nics_per_gpu": 2})",
                      "unknown field 'nics_per_gpu'");
}

// NCCL's network bandwidth per node is NICs x rate / 8: 4 x 400 / 8 = 200 GB/s against the
// 8 x 400 / 8 = 400 GB/s the curves were measured on.
TEST(NicSharingCost, RingOverEightGpusOnFourNicsHasHalfTheNodeBandwidth) {
  EXPECT_DOUBLE_EQ(collectives::nominal_fabric(four_nics(), 4).net_busbw_GBps, 200.0);
  EXPECT_DOUBLE_EQ(collectives::nominal_fabric(four_nics()).net_busbw_GBps, 400.0);
  EXPECT_DOUBLE_EQ(collectives::nominal_fabric(eight_nics(), 8).net_busbw_GBps, 400.0);
  std::vector<int> world(16);
  std::iota(world.begin(), world.end(), 0);
  EXPECT_EQ(topology::resolve_group(four_nics(), world).nics_per_node, 4);
  EXPECT_EQ(topology::resolve_group(eight_nics(), world).nics_per_node, 8);
}

// Two GPUs per node, 2 nodes: one NIC (50 GB/s) on the 4-NIC nodes, two (100 GB/s) on the
// 8-NIC ones. NVLink (371 GB/s) does not bind, so the bandwidth term of the NCCL estimate
// (time - latency) doubles and the latency stays.
TEST(NicSharingCost, GroupBehindOneNicTakesTwiceTheBandwidthTerm) {
  const collectives::CollectiveModel four(four_nics(),
                                          generators::llm::nominal_collective_curves(four_nics()));
  const collectives::CollectiveModel eight(
      eight_nics(), generators::llm::nominal_collective_curves(eight_nics()));
  const std::vector<int> group{0, 1, 8, 9};
  const Bytes bytes = Bytes{1} << 30;
  const auto shared = four.predict(CollectiveKind::kAllReduce, bytes, group);
  const auto alone = eight.predict(CollectiveKind::kAllReduce, bytes, group);
  EXPECT_EQ(shared.route.nics_per_node, 1);
  EXPECT_EQ(alone.route.nics_per_node, 2);
  EXPECT_EQ(shared.nccl.algorithm, alone.nccl.algorithm);
  EXPECT_DOUBLE_EQ(shared.nccl.latency_us, alone.nccl.latency_us);
  EXPECT_NEAR(
      (shared.nccl.time_us - shared.nccl.latency_us) / (alone.nccl.time_us - alone.nccl.latency_us),
      2.0, 1e-9);
  // The carried curve keeps the measured shape: at 1 GiB the duration is bandwidth-bound, so it
  // nearly doubles too.
  EXPECT_NEAR(shared.duration_us / alone.duration_us, 2.0, 0.02);
}

// A GPU behind a NIC outside the group runs its own copy of the collective (the other TP rank
// of a DP group): copies = GPUs behind the NIC / members behind it.
TEST(NicSharingEngine, CopiesOfTheGpusBehindTheSameNic) {
  const topology::Topology four = four_nics();
  const std::vector<int> dp_pair{0, 8};          // one GPU per node: its NIC mate 1 (9) outside
  const std::vector<int> nic_pairs{0, 1, 8, 9};  // both GPUs behind NIC 0 in the group
  const std::vector<int> spread{0, 2, 8, 10};    // NICs 0 and 1, one member behind each
  EXPECT_DOUBLE_EQ(topology::nic_copies(four, dp_pair, 16), 2.0);
  EXPECT_DOUBLE_EQ(topology::nic_copies(four, nic_pairs, 16), 1.0);
  EXPECT_DOUBLE_EQ(topology::nic_copies(four, spread, 16), 2.0);
  EXPECT_DOUBLE_EQ(topology::nic_copies(four, std::vector<int>{0, 1}, 16), 1.0);  // one node
  EXPECT_DOUBLE_EQ(topology::nic_copies(eight_nics(), dp_pair, 16), 1.0);
  // A GPU that runs no rank of the job (rank 9 of a 9-rank job) sends no copy; the busiest NIC
  // the group uses (node 0's, GPUs 0 and 1 both running) decides.
  EXPECT_DOUBLE_EQ(topology::nic_copies(four, std::vector<int>{1, 8}, 9), 2.0);
  const topology::Topology one_nic = topology::parse_topology(
      with_nics(R"({"count": 1, "rate_Gbps": 400, "link_class": "ib"})"), "t.json");
  EXPECT_DOUBLE_EQ(topology::nic_copies(one_nic, dp_pair, 16), 8.0);
  EXPECT_DOUBLE_EQ(topology::nic_copies(one_nic, dp_pair, 9), 8.0);
}

TEST(NicSharingEngine, TopologyRuleGivesTheCopiesOfNicGroupsOnly) {
  const engine::TopologyLinkSharing rule(
      collectives::CollectiveModel(four_nics(),
                                   generators::llm::nominal_collective_curves(four_nics())),
      16);
  CommInfo comm;
  comm.kind = CollectiveKind::kAllReduce;
  comm.bytes_in = comm.bytes_out = 1 << 26;
  const engine::LinkDemand dp = rule.demand(comm, std::vector<int>{3, 11});
  EXPECT_TRUE(dp.nic);
  EXPECT_DOUBLE_EQ(dp.nic_copies, 2.0);
  const engine::LinkDemand tp = rule.demand(comm, std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_FALSE(tp.nic);
  EXPECT_DOUBLE_EQ(tp.nic_copies, 1.0);
}

// Processor sharing: a 100 us transfer with its NIC mate's copy beside it takes 200 us; two of
// the rank's own transfers of 100 us posted together, each with a copy: the first is posted
// alone with its copy (200 us), the second shares with the first's 200 us of work still on the
// NIC: 4 equal copies, done at 400 us. A fabric transfer ignores the copies.
TEST(NicSharingEngine, TwoTransfersBehindOneNicTakeTwiceAsLong) {
  engine::LinkOccupancy occupancy;
  const engine::LinkDemand nic{.sends = true, .receives = true, .nic = true, .nic_copies = 2};
  EXPECT_DOUBLE_EQ(occupancy.share(nic, 0, 100, 0), 200);
  EXPECT_DOUBLE_EQ(occupancy.share(nic, 0, 100, 0), 400);
  engine::LinkOccupancy fabric_only;
  const engine::LinkDemand fabric{.sends = true, .receives = true, .nic = false, .nic_copies = 2};
  EXPECT_DOUBLE_EQ(fabric_only.share(fabric, 0, 100, 0), 100);
  engine::LinkOccupancy own_nic;
  const engine::LinkDemand alone{.sends = true, .receives = true, .nic = true};
  EXPECT_DOUBLE_EQ(own_nic.share(alone, 0, 100, 0), 100);
}

}  // namespace
}  // namespace perfsim
