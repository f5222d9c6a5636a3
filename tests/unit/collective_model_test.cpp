// CollectiveModel: measured curves carried through a topology by the NCCL algorithm model, as
// the engine calls it.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "collectives/bus_factor.hpp"
#include "collectives/collective_model.hpp"
#include "collectives/curve_transfer.hpp"
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

TEST(CollectiveModel, TheMeasuredShapeGivesTheMeasuredCurve) {
  const auto curves = synthetic_curves();
  const CollectiveModel one_node(h100(1), curves);
  for (Bytes bytes : {Bytes{1024}, Bytes{1} << 24, Bytes{1} << 32}) {
    const auto prediction = one_node.predict(CollectiveKind::kAllReduce, bytes, ranks(8));
    EXPECT_DOUBLE_EQ(prediction.duration_us, curves.at(kIntra).curve.duration_us(bytes * 1.75));
    EXPECT_EQ(prediction.curve, kIntra);
  }
  const CollectiveModel two_nodes(h100(2), curves);
  const Bytes bytes = Bytes{1} << 30;
  const auto prediction = two_nodes.predict(CollectiveKind::kAllReduce, bytes, ranks(16));
  EXPECT_EQ(prediction.curve, kInter);
  EXPECT_DOUBLE_EQ(prediction.duration_us, curves.at(kInter).curve.duration_us(
                                               bytes * bus_factor(CollectiveKind::kAllReduce, 16)));
  EXPECT_EQ(prediction.nccl.algorithm, NcclAlgorithm::kNvlsTree);
}

TEST(CollectiveModel, EachCollectiveHasItsOwnAlgorithmAndBusFactor) {
  const auto curves = synthetic_curves();
  const CollectiveModel model(h100(1), curves);
  const Bytes large = Bytes{1} << 32;
  const auto all_reduce = model.predict(CollectiveKind::kAllReduce, large, ranks(8));
  const auto all_gather = model.predict(CollectiveKind::kAllGather, large, ranks(8));
  const auto reduce_scatter = model.predict(CollectiveKind::kReduceScatter, large, ranks(8));
  const auto broadcast = model.predict(CollectiveKind::kBroadcast, large, ranks(8));
  const auto all_to_all = model.predict(CollectiveKind::kAllToAll, large, ranks(8));
  EXPECT_EQ(all_reduce.nccl.algorithm, NcclAlgorithm::kNvls);
  EXPECT_EQ(all_gather.nccl.algorithm, NcclAlgorithm::kRing);  // NVLS gathers run at half rate
  EXPECT_EQ(broadcast.nccl.algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(all_to_all.nccl.algorithm, NcclAlgorithm::kPointToPoint);
  // Reduce-scatter and all-gather move the same bytes over the same ring.
  EXPECT_DOUBLE_EQ(all_gather.duration_us, reduce_scatter.duration_us);
  // Each collective keeps the model's time relative to the measured all-reduce.
  for (const auto& [prediction, kind] : {std::pair{all_gather, CollectiveKind::kAllGather},
                                         {broadcast, CollectiveKind::kBroadcast},
                                         {all_to_all, CollectiveKind::kAllToAll}}) {
    const double measured_share = prediction.duration_us / all_reduce.duration_us;
    const double model_share = prediction.nccl.time_us / all_reduce.nccl.time_us;
    EXPECT_NEAR(measured_share, model_share, 1e-9 * model_share) << collective_name(kind);
  }
  // A smaller group inside the node: ring latency grows with ranks, so 2 ranks are faster on
  // tiny messages than 8.
  EXPECT_LT(model.predict(CollectiveKind::kAllReduce, 8, ranks(2)).duration_us,
            model.predict(CollectiveKind::kAllReduce, 8, ranks(8)).duration_us);
}

TEST(CollectiveModel, NodeScalingFollowsTheAlgorithm) {
  const auto curves = synthetic_curves();
  const CollectiveModel two(h100(2), curves);
  const CollectiveModel eight(h100(8), curves);
  for (Bytes bytes : {Bytes{8}, Bytes{1} << 20, Bytes{1} << 34}) {
    const double t2 = two.predict(CollectiveKind::kAllReduce, bytes, ranks(16)).duration_us;
    const double t8 = eight.predict(CollectiveKind::kAllReduce, bytes, ranks(64)).duration_us;
    EXPECT_GT(t8, t2) << bytes;
  }
  // Tiny all-reduce: tree latency, 2 log2(N) network hops: 2 nodes -> 8 nodes adds 4 hops.
  const auto tiny2 = two.predict(CollectiveKind::kAllReduce, 8, ranks(16));
  const auto tiny8 = eight.predict(CollectiveKind::kAllReduce, 8, ranks(64));
  EXPECT_EQ(tiny2.nccl.algorithm, NcclAlgorithm::kTree);
  EXPECT_EQ(tiny8.nccl.algorithm, NcclAlgorithm::kTree);
  EXPECT_NEAR(tiny8.nccl.latency_us - tiny2.nccl.latency_us,
              4.0 * 5.0 * eight.calibration().net_latency_scale, 1e-9);
  // Huge all-reduce: NVLS-tree, bound by NVLS at 2 nodes (each node talks to one peer at twice
  // the NIC rate) and by the NICs beyond: the time grows by the bus factor and that bound.
  const Bytes huge = Bytes{1} << 36;
  const double ratio = eight.predict(CollectiveKind::kAllReduce, huge, ranks(64)).duration_us /
                       two.predict(CollectiveKind::kAllReduce, huge, ranks(16)).duration_us;
  const NcclFabric fabric = calibrated(nominal_fabric(h100(8)), eight.calibration());
  const double bound2 = std::min(fabric.nvls_busbw_GBps, 2 * fabric.net_busbw_GBps);
  const double bound8 = std::min(fabric.nvls_busbw_GBps, fabric.net_busbw_GBps);
  EXPECT_NEAR(ratio, (bus_factor(CollectiveKind::kAllReduce, 64) / 1.875) * bound2 / bound8, 0.01);
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
                   model.predict(CollectiveKind::kAllToAllv, 3 << 20, ranks(8)).duration_us);
  comm.kind = CollectiveKind::kAllReduce;
  call.group = "dp/3";  // one rank on each node: one NIC per node
  const auto dp = model.predict(CollectiveKind::kAllReduce, 1 << 30, std::vector<int>{3, 11});
  EXPECT_EQ(dp.route.nics_per_node, 1);
  EXPECT_GT(source.collective_duration_us(call), 0.0);
  call.group = "nobody";
  EXPECT_THROW(source.collective_duration_us(call), InputError);
}

TEST(CollectiveModel, TopologyNcclSettingsRestrictTheChoice) {
  auto topology = h100(2);
  topology.nccl.algorithms = "ring";
  topology.nccl.protocols = "^LL128";
  const CollectiveModel model(topology, synthetic_curves());
  for (Bytes bytes : {Bytes{8}, Bytes{1} << 20, Bytes{1} << 34}) {
    const auto prediction = model.predict(CollectiveKind::kAllReduce, bytes, ranks(16));
    EXPECT_EQ(prediction.nccl.algorithm, NcclAlgorithm::kRing);
    EXPECT_NE(prediction.nccl.protocol, NcclProtocol::kLL128);
  }
  topology.nccl.algorithms = "ring,bogus";
  EXPECT_THROW(CollectiveModel(topology, synthetic_curves()), InputError);
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

// A PCIe-only box: GPUs 0-1 behind a switch on socket 0, 2-3 on socket 1 (Skylake: 10 GB/s
// between sockets). A pair across sockets is bound by the socket link, a pair on one switch by
// PCIe 4 x16; the measured 4-GPU curve already spans both sockets.
TEST(CollectiveModel, PcieGpusOnDifferentSocketsShareTheSocketLink) {
  const std::string json = R"({
    "name": "pcie-4gpu", "nodes": 1,
    "node": {"gpus": 4, "gpu_model": "A100-PCIE-40GB", "cpu": "intel-skylake",
             "fabric": {"type": "pcie"},
             "pcie": {"generation": 4, "link_class": "pcie4", "switches": [
               {"name": "sw0", "gpus": [0, 1], "host_bridge": "cpu0"},
               {"name": "sw1", "gpus": [2, 3], "host_bridge": "cpu1"}]}},
    "link_classes": {"pcie4": {"medium": "pcie4-x16", "bandwidth_GBps": 25,
                               "curves": {"all_reduce": "pcie-4gpu-allreduce"}}}})";
  const auto topology = topology::parse_topology(json, "pcie-4gpu.json");
  CurveSet curves;
  curves.emplace("pcie-4gpu-allreduce", FittedCurve{"pcie-4gpu-allreduce",
                                                    CollectiveKind::kAllReduce,
                                                    4,
                                                    1,
                                                    "",
                                                    PiecewiseSigmoidModel::from_free_parameters(
                                                        1e4, 1e8, 20.0, 9.0, 20.0, 0.5),
                                                    {}});
  const CollectiveModel model(topology, curves);
  const Bytes large = Bytes{1} << 30;
  const auto same_switch = model.predict(CollectiveKind::kAllReduce, large, std::vector<int>{0, 1});
  const auto across = model.predict(CollectiveKind::kAllReduce, large, std::vector<int>{0, 2});
  EXPECT_NEAR(across.duration_us / same_switch.duration_us, 24.0 / 10.0, 0.05);
  EXPECT_NE(same_switch.nccl.protocol, NcclProtocol::kLL128);  // no LL128 over PCIe
  // The measured shape gives the measured curve back.
  EXPECT_DOUBLE_EQ(model.predict(CollectiveKind::kAllReduce, large, ranks(4)).duration_us,
                   curves.at("pcie-4gpu-allreduce").curve.duration_us(large * 1.5));
}

}  // namespace
}  // namespace perfsim::collectives
