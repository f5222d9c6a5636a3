// The NIC transport of a topology (nics/transport: hop latency, bandwidth efficiency): what it
// changes in the tuner's fabric, where it applies, and how the parser checks it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "collectives/bus_factor.hpp"
#include "collectives/collective_model.hpp"
#include "collectives/nccl_fabric.hpp"
#include "perfsim/error.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {
namespace {

std::filesystem::path config(const char* name) {
  return std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/topologies" / name;
}

topology::Topology h100_with_transport(double hop_latency_us, double efficiency) {
  topology::Topology topology = topology::load_topology(config("hgx-h100-2node.json").string());
  topology.node.nics->hop_latency_us = hop_latency_us;
  topology.node.nics->bandwidth_efficiency = efficiency;
  return topology;
}

TEST(NicTransport, WithoutOneTheFabricIsUnchanged) {
  const auto topology = h100_with_transport(0.0, 1.0);
  const NcclFabric nominal = nominal_fabric(topology);
  const NcclFabric carried = with_nic_transport(nominal, topology);
  EXPECT_DOUBLE_EQ(carried.net_latency_scale, nominal.net_latency_scale);
  EXPECT_DOUBLE_EQ(carried.net_busbw_GBps, nominal.net_busbw_GBps);
}

TEST(NicTransport, HopLatencyScalesAgainstNcclsInfiniBandHop) {
  // 8 x 400 Gb/s = 400 GB/s per node; a 42 us hop is 3x NCCL's 14 us Simple network hop.
  const auto topology = h100_with_transport(42.0, 0.5);
  const NcclFabric carried = with_nic_transport(nominal_fabric(topology), topology);
  EXPECT_DOUBLE_EQ(carried.net_latency_scale, 3.0);
  EXPECT_DOUBLE_EQ(carried.net_busbw_GBps, 200.0);
}

TEST(NicTransport, TwoNodeTreeLatencyGrowsByTheHopDifference) {
  // Tree all-reduce of 8 bytes on 2 x 1 GPU (every hop on the network, LL): latency
  // = base + 2 log2(2) net hop; the transport adds 2 x (scale - 1) x NCCL's LL tree hop (5 us).
  const auto topology = h100_with_transport(28.0, 1.0);
  const NcclFabric base = nominal_fabric(topology);
  const NcclFabric carried = with_nic_transport(base, topology);
  const CommShape shape{2, 2};
  const auto before = nccl_pair_estimate(CollectiveKind::kAllReduce, 8, shape, base,
                                         NcclAlgorithm::kTree, NcclProtocol::kLL);
  const auto after = nccl_pair_estimate(CollectiveKind::kAllReduce, 8, shape, carried,
                                        NcclAlgorithm::kTree, NcclProtocol::kLL);
  EXPECT_NEAR(after.latency_us - before.latency_us, 2.0 * (2.0 - 1.0) * 5.0, 1e-9);
}

TEST(NicTransport, OnlyGroupsThatCrossNodesPayIt) {
  // The curves hgx-h100-2node.json names: 1 node x 8 GPUs, 2 x 8 and 4 x 8.
  CurveSet curves;
  const auto add = [&curves](const char* name, int ranks, int nodes) {
    curves.emplace(name, FittedCurve{name,
                                     CollectiveKind::kAllReduce,
                                     ranks,
                                     nodes,
                                     "",
                                     PiecewiseSigmoidModel::from_free_parameters(1e5, 1e9, 30.0,
                                                                                 400.0, 24.0, 0.4),
                                     {}});
  };
  add("azure-ndh200v5-1node-allreduce-busbw", 8, 1);
  add("h100-ib400-2node-allreduce", 16, 2);
  add("h100-ib400-4node-allreduce", 32, 4);
  auto plain = h100_with_transport(0.0, 1.0);
  auto slow = h100_with_transport(140.0, 0.5);
  const CollectiveModel plain_model(plain, curves);
  const CollectiveModel slow_model(slow, curves);
  std::vector<int> node(8), both(16);
  std::iota(node.begin(), node.end(), 0);
  std::iota(both.begin(), both.end(), 0);
  const Bytes bytes = Bytes{1} << 20;
  EXPECT_DOUBLE_EQ(slow_model.predict(CollectiveKind::kAllReduce, bytes, node).duration_us,
                   plain_model.predict(CollectiveKind::kAllReduce, bytes, node).duration_us);
  EXPECT_GT(slow_model.predict(CollectiveKind::kAllReduce, bytes, both).duration_us,
            1.5 * plain_model.predict(CollectiveKind::kAllReduce, bytes, both).duration_us);
}

TEST(NicTransport, ARateBelowTheCurvesScalesTheNetworkBandwidth) {
  // Curves measured on 400 Gb/s NICs, this fabric's NICs run at 200: 8 x 200 / 8 = 200 GB/s
  // per node after the transport, 400 in the fabric the curves are calibrated on.
  auto topology = h100_with_transport(0.0, 1.0);
  topology.node.nics->curves_rate_Gbps = 400.0;
  topology.node.nics->rate_Gbps = 200.0;
  const NcclFabric measured = nominal_fabric(topology);
  EXPECT_DOUBLE_EQ(measured.net_busbw_GBps, 400.0);
  EXPECT_DOUBLE_EQ(with_nic_transport(measured, topology).net_busbw_GBps, 200.0);
}

TEST(NicTransport, AllToAllPaysThePeerLatencyOncePerRemotePeer) {
  // 2 nodes x 8 GPUs: every rank has 8 peers on the other node; a 3 us message cost adds 24 us.
  // Send/recv has one peer and no such term.
  auto topology = h100_with_transport(0.0, 1.0);
  topology.node.nics->peer_latency_us = 3.0;
  const NcclFabric base = nominal_fabric(topology);
  const NcclFabric carried = with_nic_transport(base, topology);
  const CommShape shape{16, 2};
  const double bytes = 1 << 20;
  EXPECT_NEAR(nccl_estimate(CollectiveKind::kAllToAll, bytes, shape, carried).latency_us -
                  nccl_estimate(CollectiveKind::kAllToAll, bytes, shape, base).latency_us,
              8 * 3.0, 1e-9);
  EXPECT_DOUBLE_EQ(nccl_estimate(CollectiveKind::kSend, bytes, CommShape{2, 2}, carried).latency_us,
                   nccl_estimate(CollectiveKind::kSend, bytes, CommShape{2, 2}, base).latency_us);
}

TEST(NicTransport, TheParserRejectsAnEfficiencyAboveOne) {
  std::ifstream in(config("gcp-a3mega-2node.json"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string key = "\"bandwidth_efficiency\": ";
  const auto at = text.find(key);
  ASSERT_NE(at, std::string::npos);
  const auto end = text.find_first_of(",\n}", at + key.size());
  text.replace(at + key.size(), end - at - key.size(), "1.5");
  const auto path = std::filesystem::temp_directory_path() / "nic_transport_bad.json";
  std::ofstream(path) << text;
  EXPECT_THROW(topology::load_topology(path.string()), InputError);
}

// A NIC class that borrows another GPU generation's sweeps (nics/transport/curves_gpu_model):
// the A100 RoCE node below names the H100 + 400G InfiniBand curves. Carried from a fabric built
// on the measured H100 node, the large-message bus bandwidth stays within this node's own
// NVLink bound; carried from this node's fabric, the H100's NVLS plateau leaks through.
TEST(NicTransport, CurvesFromOtherGpusAreCarriedFromThatNode) {
  topology::Topology topology =
      topology::load_topology(config("oci-bm-gpu4.8-roce-2node.json").string());
  CurveSet curves;
  const auto add = [&curves](const std::string& name, int ranks, int nodes, double plateau) {
    curves.emplace(name, FittedCurve{name,
                                     CollectiveKind::kAllReduce,
                                     ranks,
                                     nodes,
                                     "",
                                     PiecewiseSigmoidModel::from_free_parameters(
                                         1e5, 1e9, 30.0, plateau, 24.0, 0.4),
                                     {}});
  };
  for (int gpus = 2; gpus <= 8; ++gpus)
    add("allreduce-" + std::to_string(gpus) + "gpu", gpus, 1, 230.0);
  add("azure-nda100v4-1node-allreduce-busbw", 8, 1, 230.0);  // the PCIe class's stand-in
  add("h100-ib400-2node-allreduce", 16, 2, 480.0);
  add("h100-ib400-4node-allreduce", 32, 4, 360.0);
  std::vector<int> both(16);
  std::iota(both.begin(), both.end(), 0);
  const Bytes bytes = Bytes{16} << 30;
  const auto busbw_GBps = [&](const CollectiveModel& model) {
    return bytes * bus_factor(CollectiveKind::kAllReduce, 16) /
           (1e3 * model.predict(CollectiveKind::kAllReduce, bytes, both).duration_us);
  };
  const CollectiveModel carried_from_h100(topology, curves);
  const double a100_intra_GBps = 12 * 20.0 * carried_from_h100.calibration().intra_scale;
  EXPECT_LE(busbw_GBps(carried_from_h100), a100_intra_GBps * 1.0001);
  topology.node.nics->curves_gpu_model.clear();
  topology.node.nics->curves_nvlinks_per_gpu = 0;
  EXPECT_GT(busbw_GBps(CollectiveModel(topology, curves)), 1.2 * a100_intra_GBps);
}

}  // namespace
}  // namespace perfsim::collectives
