// CollectiveModel: flat and hierarchical predictions through a topology, as the engine calls it.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "collectives/bus_factor.hpp"
#include "collectives/collective_model.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

constexpr char kIntra[] = "azure-ndh200v5-1node-allreduce-busbw";
constexpr char kInter[] = "h100-ib400-2node-allreduce";

topology::Topology h100(int nodes) {
  const auto path = std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/topologies/hgx-h100.json";
  if (!std::filesystem::exists(path))
    throw std::runtime_error("missing config " + path.string());
  return topology::with_node_count(topology::load_topology(path.string()), nodes);
}

CurveSet synthetic_curves() {
  CurveSet curves;
  curves.emplace(kIntra, FittedCurve{kIntra,
                                     CollectiveKind::kAllReduce,
                                     8,
                                     1,
                                     "",
                                     PiecewiseSigmoidModel::from_free_parameters(1e5, 1e9, 30.0,
                                                                                 480.0, 24.0, 0.4),
                                     {}});
  curves.emplace(kInter, FittedCurve{kInter,
                                     CollectiveKind::kAllReduce,
                                     16,
                                     2,
                                     "",
                                     PiecewiseSigmoidModel::from_free_parameters(1e4, 1e9, 26.0,
                                                                                 460.0, 24.0, 0.3),
                                     {}});
  return curves;
}

std::vector<int> ranks(int count) {
  std::vector<int> result(count);
  std::iota(result.begin(), result.end(), 0);
  return result;
}

TEST(CollectiveModel, FlatGroupIsTheCurveAtBusBytes) {
  const auto curves = synthetic_curves();
  const CollectiveModel model(h100(1), curves);
  for (Bytes bytes : {Bytes{1024}, Bytes{1} << 24, Bytes{1} << 32}) {
    const auto prediction = model.predict(CollectiveKind::kAllReduce, bytes, ranks(8));
    EXPECT_DOUBLE_EQ(prediction.duration_us, curves.at(kIntra).curve.duration_us(bytes * 1.75));
    EXPECT_EQ(prediction.intra_curve, kIntra);
  }
  // Four of the eight GPUs: the same switch curve with the 4-rank bus factor.
  EXPECT_DOUBLE_EQ(collective_duration_us(model, CollectiveKind::kAllReduce, 1 << 26, ranks(4)),
                   curves.at(kIntra).curve.duration_us((1 << 26) * 1.5));
  // An all-gather reuses the all-reduce bus-bandwidth curve with its own factor (n-1)/n.
  EXPECT_DOUBLE_EQ(collective_duration_us(model, CollectiveKind::kAllGather, 1 << 26, ranks(8)),
                   curves.at(kIntra).curve.duration_us((1 << 26) * 0.875));
}

TEST(CollectiveModel, HierarchicalAtTheReferenceShapeIsTheMeasuredCurve) {
  const auto curves = synthetic_curves();
  const CollectiveModel model(h100(2), curves);
  const Bytes bytes = Bytes{1} << 30;
  const auto prediction = model.predict(CollectiveKind::kAllReduce, bytes, ranks(16));
  EXPECT_EQ(prediction.route.algorithm, topology::GroupAlgorithm::kHierarchical);
  EXPECT_DOUBLE_EQ(
      prediction.phases.inter_us,
      curves.at(kInter).curve.duration_us(bytes * bus_factor(CollectiveKind::kAllReduce, 16)));
  EXPECT_DOUBLE_EQ(prediction.duration_us,
                   std::max(prediction.phases.inter_us, prediction.phases.intra_us));
}

TEST(CollectiveModel, MoreNodesCostMore) {
  const auto curves = synthetic_curves();
  const CollectiveModel two(h100(2), curves);
  const CollectiveModel eight(h100(8), curves);
  for (Bytes bytes : {Bytes{8}, Bytes{1} << 20, Bytes{1} << 34}) {
    const double t2 = two.predict(CollectiveKind::kAllReduce, bytes, ranks(16)).duration_us;
    const double t8 = eight.predict(CollectiveKind::kAllReduce, bytes, ranks(64)).duration_us;
    EXPECT_GT(t8, t2) << bytes;
  }
  // Large messages: bytes per NIC grow from 2(2-1)/2 = 1 to 2(8-1)/8 = 1.75 times the message.
  const Bytes large = Bytes{1} << 36;
  const double ratio = eight.predict(CollectiveKind::kAllReduce, large, ranks(64)).duration_us /
                       two.predict(CollectiveKind::kAllReduce, large, ranks(16)).duration_us;
  EXPECT_NEAR(ratio, 1.75, 0.02);
}

TEST(CollectiveModel, ServesTheEngineThroughCommDurationSource) {
  const auto curves = synthetic_curves();
  std::vector<ProcessGroup> groups{{"tp/0", {0, 1, 2, 3, 4, 5, 6, 7}, ""}, {"dp/3", {3, 11}, ""}};
  const CollectiveModel model(h100(2), curves, groups);
  const CommDurationSource& source = model;
  CommInfo comm;
  comm.kind = CollectiveKind::kAllToAllv;
  comm.bytes_in = 1 << 20;
  comm.bytes_out = 3 << 20;  // received more than sent: the larger counts
  CollectiveCall call{"tp/0", 8, 0, &comm, nullptr, std::nullopt};
  EXPECT_DOUBLE_EQ(source.collective_duration_us(call),
                   curves.at(kIntra).curve.duration_us((3 << 20) * 0.875));
  comm.kind = CollectiveKind::kAllReduce;
  call.group = "dp/3";  // one rank on each node: the NIC phase only
  EXPECT_GT(source.collective_duration_us(call), 0.0);
  call.group = "nobody";
  EXPECT_THROW(source.collective_duration_us(call), InputError);
}

TEST(CollectiveModel, MissingAssetNamesTheTopologyReference) {
  CurveSet curves = synthetic_curves();
  curves.erase(kInter);
  try {
    CollectiveModel model(h100(2), curves);
    FAIL() << "accepted a topology whose curve is missing";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location().rfind("/link_classes/ib-ndr400/curves/", 0), 0u) << error.what();
    EXPECT_NE(error.problem().find(kInter), std::string::npos);
  }
}

}  // namespace
}  // namespace perfsim::collectives

namespace perfsim::collectives {
namespace {

TEST(Hierarchical, BytesPerNicAndLatencySteps) {
  // 2 nodes x 8 GPUs, one NIC per GPU: an all-reduce puts 2(2-1)/2 / 8 of the message on a NIC.
  EXPECT_DOUBLE_EQ(bytes_per_nic_share(CollectiveKind::kAllReduce, {2, 8, 8}), 1.0 / 8);
  EXPECT_DOUBLE_EQ(bytes_per_nic_share(CollectiveKind::kAllReduce, {4, 8, 8}), 1.5 / 8);
  EXPECT_DOUBLE_EQ(bytes_per_nic_share(CollectiveKind::kAllGather, {4, 8, 8}), 0.75 / 8);
  // All-to-all: every rank's off-node bytes leave through the node's NICs.
  EXPECT_DOUBLE_EQ(bytes_per_nic_share(CollectiveKind::kAllToAll, {4, 8, 4}), 0.75 * 8 / 4);
  // Fewer ranks than NICs on a node: only the ranks' own NICs carry traffic.
  EXPECT_DOUBLE_EQ(bytes_per_nic_share(CollectiveKind::kAllReduce, {2, 2, 8}), 1.0 / 2);
  // All-reduce: min(ring 2(N-1), tree 2 ceil(log2 N)); ring steps N-1 otherwise.
  EXPECT_EQ(inter_node_latency_steps(CollectiveKind::kAllReduce, 2), 2);
  EXPECT_EQ(inter_node_latency_steps(CollectiveKind::kAllReduce, 4), 4);
  EXPECT_EQ(inter_node_latency_steps(CollectiveKind::kAllReduce, 32), 10);
  EXPECT_EQ(inter_node_latency_steps(CollectiveKind::kAllGather, 32), 31);
  EXPECT_EQ(inter_node_latency_steps(CollectiveKind::kSend, 2), 1);
  EXPECT_EQ(inter_node_latency_steps(CollectiveKind::kAllReduce, 1), 0);
}

TEST(Hierarchical, InterCurveMustComeFromSeveralNodes) {
  const FittedCurve one_node{
      "one", CollectiveKind::kAllReduce,
      8,     1,
      "",    PiecewiseSigmoidModel::from_free_parameters(1e4, 1e8, 20, 100, 20, 1),
      {}};
  EXPECT_THROW(
      hierarchical_duration(CollectiveKind::kAllReduce, 1024, {2, 8, 8}, nullptr, one_node, 8),
      RuntimeFailure);
}

}  // namespace
}  // namespace perfsim::collectives
