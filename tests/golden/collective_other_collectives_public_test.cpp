// Issue 17: public nccl-tests sweeps that no shipped curve ever saw
// (tests/data/nccl-tests-public: gcp-a3mega-allgather/, gcp-a3ultra-roce/, gcp-a3high-tcpx/,
// in-node/): collectives other than all-reduce, and an all-reduce run with and without
// GPUDirect. Every sweep is predicted through a shipped topology and the shipped curves, which
// hold all-reduce only: a collective's own bus factor, algorithm and protocol come from the NCCL
// model. Each bound is the out-of-sample GMAE collectives/README.md reports for it.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <optional>

#include "assets/collective_curve_assets.hpp"
#include "collectives/collective_model.hpp"
#include "collectives/error_metrics.hpp"
#include "collectives/nccl_tuning.hpp"
#include "support/public_nccl_sweeps.hpp"

namespace perfsim::collectives {
namespace {

const std::filesystem::path kSource(PERFSIM_SOURCE_DIR);

const CurveSet& shipped_curves() {
  static const CurveSet curves =
      assets::read_collective_curves((kSource / "configs/assets/collective_curves.h5").string());
  return curves;
}

CollectiveModel model_for(const char* topology_file, int nodes,
                          std::optional<NcclSettings> settings = std::nullopt) {
  const auto path = kSource / "configs/topologies" / topology_file;
  return CollectiveModel(topology::with_node_count(topology::load_topology(path.string()), nodes),
                         shipped_curves(), std::vector<ProcessGroup>{}, settings);
}

// GMAE in percent over the points (out-of-place and in-place) whose size `keep` accepts.
template <typename Keep>
double gmae_percent(const CollectiveModel& model, const CollectiveSweep& sweep, Keep keep) {
  std::vector<double> measured, predicted;
  for (const auto& point : predict_sweep(model, sweep)) {
    if (!keep(point.bytes))
      continue;
    measured.push_back(point.measured_us);
    predicted.push_back(point.predicted_us);
  }
  EXPECT_FALSE(measured.empty());
  return 100.0 * summarize_errors(predicted, measured).gmae;
}

double gmae_percent(const CollectiveModel& model, const CollectiveSweep& sweep) {
  return gmae_percent(model, sweep, [](Bytes) { return true; });
}

TEST(OtherCollectivesPublic, GcpA3MegaAllGatherOnTwoClusters) {
  // The A3 Mega topology's transport was fitted on part of an all-reduce sweep of a third
  // cluster; neither all-gather sweep was used. As InfiniBand (hgx-h100-2node.json) the same
  // sweeps stay far off: the agreement on bandwidth-bound sizes comes from the transport terms.
  struct Case {
    const char* file;
    double claimed_percent;
    double infiniband_at_least_percent;
  };
  for (const Case& c : {Case{"gcp-a3mega-gke-2node-allgather.txt", 26.0, 65.0},
                        Case{"dstack-a3mega-2node-allgather.txt", 20.0, 35.0}}) {
    const auto sweep =
        test_support::public_nccl_sweep(std::filesystem::path("gcp-a3mega-allgather") / c.file);
    ASSERT_EQ(sweep.kind, CollectiveKind::kAllGather);
    const double tcpxo = gmae_percent(model_for("gcp-a3mega-2node.json", 2), sweep);
    const double as_infiniband = gmae_percent(model_for("hgx-h100-2node.json", 2), sweep);
    std::cout << c.file << ": " << tcpxo << "% (as InfiniBand " << as_infiniband << "%)\n";
    EXPECT_LE(tcpxo, c.claimed_percent) << c.file;
    EXPECT_GE(as_infiniband, c.infiniband_at_least_percent) << c.file;
  }
}

TEST(OtherCollectivesPublic, GcpA3UltraRoceAllGatherAsInfiniBand) {
  // 8x H200 + 8x 400G RoCE (GPUDirect RDMA), 2 nodes, two runs, through the H100 + 400G
  // InfiniBand topology: no RoCE term, the NVLink4 node is the same.
  struct Case {
    const char* file;
    double claimed_percent;
  };
  for (const Case& c : {Case{"gcp-a3ultra-h200-2node-allgather.txt", 10.0},
                        Case{"skypilot-gcp-pod-a3ultra-h200-2node-allgather.txt", 10.5}}) {
    const auto sweep =
        test_support::public_nccl_sweep(std::filesystem::path("gcp-a3ultra-roce") / c.file);
    ASSERT_EQ(sweep.kind, CollectiveKind::kAllGather);
    const double as_infiniband = gmae_percent(model_for("hgx-h100-2node.json", 2), sweep);
    std::cout << c.file << " as InfiniBand: " << as_infiniband << "%\n";
    EXPECT_LE(as_infiniband, c.claimed_percent) << c.file;
  }
}

TEST(OtherCollectivesPublic, GcpA3HighTcpxAndARunWithoutGpuDirect) {
  // SkyPilot's A3 High all-reduce (ring, Simple, 8 channels) with GPUDirect-TCPX and without
  // it (NCCL's sockets on the management NIC). The topology's transport efficiency was fitted
  // on the TCPX run's sizes >= 1 GiB only; its hop latency is A3 Mega's TCPXO value (the
  // busbw-only table gives small sizes no usable time). Judged on 1 MiB - 512 MiB.
  const auto healthy = test_support::public_nccl_sweep(
      "gcp-a3high-tcpx/skypilot-a3high-2node-allreduce-tcpx-busbw.txt");
  const auto no_gpudirect = test_support::public_nccl_sweep(
      "gcp-a3high-tcpx/skypilot-a3high-2node-allreduce-nogpudirect-busbw.txt");
  const auto model = model_for("gcp-a3high-2node.json", 2);
  const auto fit = [](Bytes bytes) { return bytes >= (Bytes{1} << 30); };
  const auto held = [](Bytes bytes) {
    return bytes >= (Bytes{1} << 20) && bytes < (Bytes{1} << 30);
  };
  const auto from_1_MiB = [](Bytes bytes) { return bytes >= (Bytes{1} << 20); };
  const double in_sample = gmae_percent(model, healthy, fit);
  const double held_out = gmae_percent(model, healthy, held);
  const double misconfigured = gmae_percent(model, no_gpudirect, from_1_MiB);
  const double as_infiniband = gmae_percent(model_for("hgx-h100-2node.json", 2), healthy, held);
  std::cout << "A3 High TCPX: fit rows " << in_sample << "%, held " << held_out
            << "%, as InfiniBand " << as_infiniband << "%; the run without GPUDirect "
            << misconfigured << "% off the healthy prediction\n";
  EXPECT_LE(in_sample, 1.0);
  EXPECT_LE(held_out, 18.5);
  EXPECT_GE(as_infiniband, 80.0);
  EXPECT_GE(misconfigured, 50.0);  // flagged: far from the healthy fabric's prediction
}

TEST(OtherCollectivesPublic, H100RingReduceScatterInOneNode) {
  // NVIDIA/nccl#1047: 8x H100 reduce-scatter with the ring forced, 128 MiB - 8 GiB.
  const auto sweep =
      test_support::public_nccl_sweep("in-node/nccl1047-h100-1node-reducescatter-ring.txt");
  ASSERT_EQ(sweep.kind, CollectiveKind::kReduceScatter);
  const double ring = gmae_percent(
      model_for("hgx-h100.json", 1, parse_nccl_settings("ring", "", "test", "")), sweep);
  std::cout << "H100 ring reduce-scatter: " << ring << "%\n";
  EXPECT_LE(ring, 3.5);
}

TEST(OtherCollectivesPublic, A100SendRecvInOneNode) {
  // li-plus/playground: sendrecv_perf on 8 A100 (NVSwitch), 128 MiB - 1 GiB.
  const auto sweep = test_support::public_nccl_sweep("in-node/liplus-a100-1node-sendrecv.txt");
  const double p2p = gmae_percent(model_for("dgx-a100.json", 1), sweep);
  std::cout << "A100 send/recv: " << p2p << "%\n";
  EXPECT_LE(p2p, 19.5);
}

}  // namespace
}  // namespace perfsim::collectives
