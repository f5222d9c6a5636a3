// Issue 17: fabrics the shipped curves never saw (tests/data/nccl-tests-public), predicted through
// topologies whose NIC transport (nics/transport) was fitted on part of the data only. Each
// figure asserted here is an out-of-sample GMAE that collectives/README.md reports, at the
// tolerance it claims; the same sweeps through the InfiniBand topology stay far off, so the
// agreement comes from the transport terms, not from a curve that fits anything.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "assets/collective_curve_assets.hpp"
#include "collectives/collective_model.hpp"
#include "collectives/error_metrics.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "support/public_nccl_sweeps.hpp"

namespace perfsim::collectives {
namespace {

const std::filesystem::path kSource(PERFSIM_SOURCE_DIR);

const CurveSet& shipped_curves() {
  static const CurveSet curves =
      assets::read_collective_curves((kSource / "configs/assets/collective_curves.h5").string());
  return curves;
}

CollectiveModel model_for(const char* topology_file, int nodes) {
  const auto path = kSource / "configs/topologies" / topology_file;
  return CollectiveModel(topology::with_node_count(topology::load_topology(path.string()), nodes),
                         shipped_curves());
}

// GMAE in percent over the points whose size `keep` accepts.
template <typename Keep>
double gmae_percent(const CollectiveModel& model, const CollectiveSweep& sweep, Keep keep) {
  std::vector<PredictionPoint> kept;
  for (const auto& point : predict_sweep(model, sweep)) {
    if (keep(point.bytes))
      kept.push_back(point);
  }
  EXPECT_FALSE(kept.empty());
  std::vector<double> measured, predicted;
  for (const auto& point : kept) {
    measured.push_back(point.measured_us);
    predicted.push_back(point.predicted_us);
  }
  return 100.0 * summarize_errors(predicted, measured).gmae;
}

TEST(PublicFabrics, GcpA3MegaHeldOutSizes) {
  // Transport fitted on sizes <= 4 KiB and >= 1 GiB; judged on 8 KiB - 512 MiB.
  const auto sweep = test_support::public_nccl_sweep("gcp-a3mega-h100-2node-allreduce.txt");
  const auto held = [](Bytes bytes) { return bytes > 4096 && bytes < (Bytes{1} << 30); };
  const double tcpxo = gmae_percent(model_for("gcp-a3mega-2node.json", 2), sweep, held);
  const double as_infiniband = gmae_percent(model_for("hgx-h100-2node.json", 2), sweep, held);
  std::cout << "A3 Mega held-out sizes: " << tcpxo << "% (as InfiniBand: " << as_infiniband
            << "%)\n";
  // 8.3% since the topology runs Google's TCPXO profile's NCCL_ALGO=Ring,Tree (no NVLS-tree;
  // the transport refitted on the same fit rows: hop 225 us, efficiency 1.0); 10.0% before.
  EXPECT_LE(tcpxo, 8.5);
  EXPECT_GE(as_infiniband, 50.0);
}

TEST(PublicFabrics, OciA100RoceHeldOutSizes) {
  // RoCE hop latency fitted on sizes <= 4 KiB and >= 1 GiB (efficiency held at 1); judged on
  // 8 KiB - 512 MiB. The curves are the 400G InfiniBand H100 ones, carried from an H100 fabric
  // (nics/transport/curves_gpu_model) to this A100 node. Baseline: the DGX A100 topology's HDR
  // stand-in (H100 curve at half bandwidth, InfiniBand latency).
  const auto sweep =
      test_support::public_nccl_sweep("oci-a100-roce/oci-a100-roce-2node-allreduce.txt");
  const auto held = [](Bytes bytes) { return bytes > 4096 && bytes < (Bytes{1} << 30); };
  const double roce = gmae_percent(model_for("oci-bm-gpu4.8-roce-2node.json", 2), sweep, held);
  const double hdr_stand_in = gmae_percent(model_for("dgx-a100.json", 2), sweep, held);
  std::cout << "OCI A100 RoCE held-out sizes: " << roce
            << "% (DGX A100 HDR stand-in: " << hdr_stand_in << "%)\n";
  EXPECT_LE(roce, 9.5);
  EXPECT_GT(hdr_stand_in, roce);
}

TEST(PublicFabrics, AwsP5EfaHeldOutNodeCounts) {
  // Transport fitted on the 2- and 4-node sweeps; 8, 16 and 32 nodes held out.
  struct Case {
    int nodes;
    const char* collective;
    double claimed_percent;
  };
  for (const Case& c :
       {Case{8, "allreduce", 4.0}, Case{8, "alltoall", 5.0}, Case{16, "allreduce", 8.5},
        Case{16, "alltoall", 9.5}, Case{32, "allreduce", 13.5}, Case{32, "alltoall", 11.0}}) {
    const auto sweep =
        test_support::public_nccl_sweep("aws-p5-efa/tables/aws-p5-efa-" + std::to_string(c.nodes) +
                                        "node-" + c.collective + "-busbw.txt");
    const auto all = [](Bytes) { return true; };
    const double efa = gmae_percent(model_for("aws-p5-efa.json", c.nodes), sweep, all);
    const double as_infiniband = gmae_percent(model_for("hgx-h100.json", c.nodes), sweep, all);
    std::cout << c.nodes << " nodes " << c.collective << ": " << efa << "% (as InfiniBand "
              << as_infiniband << "%)\n";
    EXPECT_LE(efa, c.claimed_percent) << c.nodes << " nodes " << c.collective;
    EXPECT_LT(efa, as_infiniband) << c.nodes << " nodes " << c.collective;
  }
}

// tree_bandwidth_efficiency follows from the 4-node fit sweep as collectives/README.md states:
// with it the model meets the measurement at 1 GiB, the largest size the p5 tuner runs on the
// trees at 32 ranks (its ring boundary, 48 MiB per rank, is 1.5 GiB there).
TEST(PublicFabrics, AwsP5TreeEfficiencyFollowsFromTheFourNodeSweep) {
  const auto sweep =
      test_support::public_nccl_sweep("aws-p5-efa/tables/aws-p5-efa-4node-allreduce-busbw.txt");
  const auto one_gib = [](Bytes bytes) { return bytes == Bytes{1} << 30; };
  EXPECT_LE(gmae_percent(model_for("aws-p5-efa.json", 4), sweep, one_gib), 0.5);
}

}  // namespace
}  // namespace perfsim::collectives
