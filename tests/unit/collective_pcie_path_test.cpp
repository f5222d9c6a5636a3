// PCIe-only boxes (collectives/pcie_path.hpp, topology/pcie_transport.hpp): NCCL's path type and
// transport choice per group, the SHM uplink sharing and duplex efficiency the tuner applies
// per collective, the SHM hop latency, and the node/pcie/transport field checks. Expected values
// are worked by hand from the rules in the headers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/collective_model.hpp"
#include "collectives/nccl_tuning.hpp"
#include "collectives/pcie_path.hpp"
#include "perfsim/error.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {
namespace {

// Six GPUs: switches sw0 {0,1} and sw1 {2,3} on socket cpu0, sw2 {4,5} on cpu1.
std::string six_gpu_box(const std::string& cpu, const std::string& transport) {
  return R"({"name": "box", "nodes": 1,
    "node": {"gpus": 6, "gpu_model": "A100-PCIE-40GB", "cpu": ")" +
         cpu + R"(", "fabric": {"type": "pcie"},
             "pcie": {"generation": 4, "link_class": "pcie4", )" +
         transport + R"( "switches": [
               {"name": "sw0", "gpus": [0, 1], "host_bridge": "cpu0"},
               {"name": "sw1", "gpus": [2, 3], "host_bridge": "cpu0"},
               {"name": "sw2", "gpus": [4, 5], "host_bridge": "cpu1"}]}},
    "link_classes": {"pcie4": {"medium": "pcie4-x16", "bandwidth_GBps": 24,
                               "curves": {"all_reduce": "box-allreduce"}}}})";
}

topology::Topology box(const std::string& cpu = "intel-skylake",
                       const std::string& transport = "") {
  return topology::parse_topology(six_gpu_box(cpu, transport), "box.json");
}

TEST(PciePath, PathTypeIsTheWorstPairOfTheGroup) {
  const auto topology = box();
  EXPECT_EQ(pcie_path(topology, std::vector<int>{0, 1}).type, PciePathType::kPix);
  EXPECT_EQ(pcie_path(topology, std::vector<int>{0, 1, 2}).type, PciePathType::kPhb);
  EXPECT_EQ(pcie_path(topology, std::vector<int>{0, 2, 4}).type, PciePathType::kSys);
}

TEST(PciePath, NcclUsesP2pUpToOneSwitchOnIntel) {
  const auto topology = box();
  EXPECT_TRUE(pcie_path(topology, std::vector<int>{0, 1}).p2p);
  EXPECT_FALSE(pcie_path(topology, std::vector<int>{1, 2}).p2p);  // PHB: SHM
  EXPECT_FALSE(pcie_path(topology, std::vector<int>{1, 4}).p2p);  // SYS: SHM
  // AMD: still PXB on a six-GPU node (NCCL relaxes it to SYS for two GPUs only).
  EXPECT_FALSE(pcie_path(box("amd-zen3"), std::vector<int>{1, 4}).p2p);
}

TEST(PciePath, TwoGpuAmdNodeUsesP2pAcrossSockets) {
  const std::string json = R"({"name": "two", "nodes": 1,
    "node": {"gpus": 2, "gpu_model": "A100-PCIE-40GB", "cpu": "amd-zen3", "fabric": {"type": "pcie"},
             "pcie": {"generation": 4, "link_class": "pcie4", "switches": [
               {"name": "rp0", "gpus": [0], "host_bridge": "cpu0"},
               {"name": "rp1", "gpus": [1], "host_bridge": "cpu1"}]}},
    "link_classes": {"pcie4": {"medium": "pcie4-x16", "bandwidth_GBps": 24,
                               "curves": {"all_reduce": "two-allreduce"}}}})";
  const auto two = topology::parse_topology(json, "two.json");
  const auto path = pcie_path(two, std::vector<int>{0, 1});
  EXPECT_EQ(path.type, PciePathType::kSys);
  EXPECT_TRUE(path.p2p);
}

TEST(PciePath, WithoutP2pEveryGpuUnderASwitchSharesItsUplink) {
  const auto no_p2p = box("intel-skylake", R"("transport": {"p2p_supported": false},)");
  const auto same_switch = pcie_path(no_p2p, std::vector<int>{0, 1});
  EXPECT_FALSE(same_switch.p2p);
  EXPECT_EQ(same_switch.gpus_per_uplink, 2);
  EXPECT_EQ(pcie_path(no_p2p, std::vector<int>{0, 1, 2}).gpus_per_uplink, 2);
  EXPECT_EQ(pcie_path(no_p2p, std::vector<int>{0, 2, 4}).gpus_per_uplink, 1);
  // With P2P supported, only the ring edge leaving each switch uses SHM: no uplink sharing.
  EXPECT_EQ(pcie_path(box(), std::vector<int>{0, 1, 2, 3}).gpus_per_uplink, 1);
}

TEST(PciePath, FabricCarriesTheShmTermsOnlyUnderShm) {
  const auto no_p2p = box("intel-skylake",
                          R"("transport": {"p2p_supported": false, "shm_duplex_efficiency": 0.7,
                              "shm_hop_extra_latency_us": 1.5},)");
  const NcclFabric shm =
      with_pcie_path(NcclFabric{}, no_p2p, pcie_path(no_p2p, std::vector<int>{0, 1}));
  EXPECT_EQ(shm.shm_gpus_per_uplink, 2);
  EXPECT_DOUBLE_EQ(shm.shm_duplex_efficiency, 0.7);
  EXPECT_DOUBLE_EQ(shm.shm_hop_extra_latency_us, 1.5);
  const auto p2p_box = box();
  const NcclFabric p2p =
      with_pcie_path(NcclFabric{}, p2p_box, pcie_path(p2p_box, std::vector<int>{0, 1}));
  EXPECT_EQ(p2p.shm_gpus_per_uplink, 0);
}

NcclFabric shm_fabric(int gpus_per_uplink, double duplex_efficiency, double hop_extra_us = 0.0) {
  NcclFabric fabric;
  fabric.intra_nvlink = false;
  fabric.intra_busbw_GBps = 12.0;
  fabric.shm_gpus_per_uplink = gpus_per_uplink;
  fabric.shm_duplex_efficiency = duplex_efficiency;
  fabric.shm_hop_extra_latency_us = hop_extra_us;
  return fabric;
}

constexpr double kOneGiB = double(1ull << 30);

// Transfer time (time - latency) of the chosen estimate.
double transfer_us(CollectiveKind kind, int n, const NcclFabric& fabric) {
  const auto estimate = nccl_estimate(kind, kOneGiB, {n, 1}, fabric);
  return estimate.time_us - estimate.latency_us;
}

TEST(PcieShm, RingSendersShareTheUplinkAndPayTheDuplexEfficiency) {
  NcclFabric p2p = shm_fabric(0, 1.0);
  // Two GPUs under one uplink, each writing and reading host memory: 12 / 2 x 0.7 GB/s.
  const double ratio = transfer_us(CollectiveKind::kAllReduce, 2, shm_fabric(2, 0.7)) /
                       transfer_us(CollectiveKind::kAllReduce, 2, p2p);
  EXPECT_NEAR(ratio, 2.0 / 0.7, 1e-9);
  EXPECT_NEAR(transfer_us(CollectiveKind::kAllGather, 4, shm_fabric(2, 0.7)) /
                  transfer_us(CollectiveKind::kAllGather, 4, p2p),
              2.0 / 0.7, 1e-9);
}

TEST(PcieShm, TwoGpuBroadcastIsOneWayAndUnshared) {
  // One sender, one receiver: the full one-way rate, no duplex loss.
  EXPECT_NEAR(transfer_us(CollectiveKind::kBroadcast, 2, shm_fabric(2, 0.7)),
              transfer_us(CollectiveKind::kBroadcast, 2, shm_fabric(0, 1.0)), 1e-6);
  EXPECT_NEAR(transfer_us(CollectiveKind::kReduce, 2, shm_fabric(2, 0.7)),
              transfer_us(CollectiveKind::kReduce, 2, shm_fabric(0, 1.0)), 1e-6);
  // Four GPUs under one uplink: a chain has three senders, each also receiving.
  EXPECT_NEAR(transfer_us(CollectiveKind::kBroadcast, 4, shm_fabric(4, 0.7)) /
                  transfer_us(CollectiveKind::kBroadcast, 4, shm_fabric(0, 1.0)),
              3.0 / 0.7, 1e-9);
}

TEST(PcieShm, AllToAllSharesTheUplinkToo) {
  const auto shm = nccl_estimate(CollectiveKind::kAllToAll, kOneGiB, {2, 1}, shm_fabric(2, 0.5));
  const auto p2p = nccl_estimate(CollectiveKind::kAllToAll, kOneGiB, {2, 1}, shm_fabric(0, 1.0));
  EXPECT_NEAR((shm.time_us - shm.latency_us) / (p2p.time_us - p2p.latency_us), 4.0, 1e-9);
}

TEST(PcieShm, EveryShmHopPaysTheExtraLatency) {
  // Ring LL all-reduce on 2 GPUs: 6.6 + 2 x (1.0 + 1.5) us; broadcast 6.6 + (1.0 + 1.5) us.
  const auto all_reduce =
      nccl_estimate(CollectiveKind::kAllReduce, 8, {2, 1}, shm_fabric(2, 1.0, 1.5));
  EXPECT_EQ(all_reduce.protocol, NcclProtocol::kLL);
  EXPECT_DOUBLE_EQ(all_reduce.latency_us, 6.6 + 2 * 2.5);
  const auto broadcast =
      nccl_estimate(CollectiveKind::kBroadcast, 8, {2, 1}, shm_fabric(2, 1.0, 1.5));
  EXPECT_DOUBLE_EQ(broadcast.latency_us, 6.6 + 2.5);
  // Not under P2P.
  EXPECT_DOUBLE_EQ(
      nccl_estimate(CollectiveKind::kAllReduce, 8, {2, 1}, shm_fabric(0, 1.0, 1.5)).latency_us,
      6.6 + 2 * 1.0);
}

void expect_input_error(const std::string& transport, const std::string& pointer) {
  try {
    box("intel-skylake", R"("transport": )" + transport + ",");
    FAIL() << "accepted " << transport;
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(pointer), std::string::npos) << error.what();
  }
}

TEST(PcieTransportField, BadFieldsAreInputErrorsNamingTheField) {
  expect_input_error(R"({"p2p": false})", "/node/pcie/transport/p2p");
  expect_input_error(R"({"p2p_supported": 0})", "/node/pcie/transport/p2p_supported");
  expect_input_error(R"({"shm_duplex_efficiency": 0})",
                     "/node/pcie/transport/shm_duplex_efficiency");
  expect_input_error(R"({"shm_duplex_efficiency": 1.2})",
                     "/node/pcie/transport/shm_duplex_efficiency");
  expect_input_error(R"({"shm_hop_extra_latency_us": -1})",
                     "/node/pcie/transport/shm_hop_extra_latency_us");
  expect_input_error(R"({"curves_topology": ""})", "/node/pcie/transport/curves_topology");
  expect_input_error(R"([1])", "/node/pcie/transport");
}

TEST(PcieTransportField, MissingMeasuredBoxIsAnInputError) {
  const auto topology =
      box("intel-skylake", R"("transport": {"curves_topology": "no-such-box.json"},)");
  CurveSet curves;
  curves.emplace("box-allreduce", FittedCurve{"box-allreduce",
                                              CollectiveKind::kAllReduce,
                                              2,
                                              1,
                                              "",
                                              PiecewiseSigmoidModel::from_free_parameters(
                                                  1e4, 1e8, 20.0, 9.0, 20.0, 0.5),
                                              {}});
  EXPECT_THROW(CollectiveModel(topology, curves), InputError);
}

}  // namespace
}  // namespace perfsim::collectives
