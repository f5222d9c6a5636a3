// Issue 17, held-out sweeps from other clusters: a second H100 + 400G InfiniBand cluster at 2, 4
// and 8 nodes (NCCL defaults, and tuned), and a 128-node H100 run with the ring and LL128 forced
// (tests/data/nccl-tests-public/ib400-8node-cluster and roce-128node; READMEs there). Nothing
// here was fitted on these sweeps. Each bound is the out-of-sample GMAE that README.md ("Many-node
// InfiniBand and RoCE sweeps") reports, rounded up to the next half percent; the issue's 8% is met
// where the bound is <= 8.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "assets/collective_curve_assets.hpp"
#include "collectives/bus_factor.hpp"
#include "collectives/collective_model.hpp"
#include "collectives/curve_transfer.hpp"
#include "collectives/error_metrics.hpp"
#include "collectives/nccl_fabric.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "support/public_nccl_sweeps.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {
namespace {

const std::filesystem::path kSource(PERFSIM_SOURCE_DIR);
const std::filesystem::path kShared = PERFSIM_SHARED_DATA_DIR;
const char* const kHgxH100 = "hgx-h100.json";

CollectiveSweep cluster_sweep(const std::string& file) {
  return test_support::public_nccl_sweep("ib400-8node-cluster/" + file);
}

const CurveSet& shipped_curves() {
  static const CurveSet curves =
      assets::read_collective_curves((kSource / "configs/assets/collective_curves.h5").string());
  return curves;
}

topology::Topology hgx_h100() {
  return topology::load_topology((kSource / "configs/topologies" / kHgxH100).string());
}

// The shipped model (curves and hgx-h100.json) at `nodes`, run as `algo` / `proto` ("" = NCCL's
// own choice) with NCCL_MIN_CTAS `min_ctas` (0 = unset).
CollectiveModel shipped_model(int nodes, const std::string& algo = "",
                              const std::string& proto = "", int min_ctas = 0) {
  std::optional<NcclSettings> settings;
  if (!algo.empty() || !proto.empty() || min_ctas > 0) {
    settings = parse_nccl_settings(algo, proto, "test", "");
    settings->min_ctas = min_ctas;
  }
  return CollectiveModel(topology::with_node_count(hgx_h100(), nodes), shipped_curves(), {},
                         settings);
}

double gmae_percent(const std::vector<PredictionPoint>& points) {
  return 100.0 * summarize_by_region(points).all.gmae;
}

double blind_percent(const CollectiveSweep& sweep, const CollectiveModel& model) {
  const double gmae = gmae_percent(predict_sweep(model, sweep));
  std::cout << sweep.name << " (shipped model, " << sweep.n_nodes << " nodes): " << gmae << "%\n";
  return gmae;
}

TEST(ManyNodeInfiniBand, SecondClusterDefaultNcclBlind) {
  EXPECT_LE(blind_percent(cluster_sweep("ib400c-2node-allreduce.txt"), shipped_model(2)), 4.5);
  EXPECT_LE(blind_percent(cluster_sweep("ib400c-4node-allreduce.txt"), shipped_model(4)), 9.5);
  EXPECT_LE(blind_percent(cluster_sweep("ib400c-8node-allreduce.txt"), shipped_model(8)), 12.0);
}

TEST(ManyNodeInfiniBand, TunedRunsBlind) {
  // Each run with the channel setting it states (NCCL_MIN_CTAS=24; NCCL_MIN_NCHANNELS=32, the
  // older name); QPs per connection have no setting. Under NCCL's per-channel rates neither
  // channel count binds at these shapes, and the 128-node sizes are one LL128 loop at 16 or 32
  // channels alike: the figures are those of the default channel count.
  const auto tuned = cluster_sweep("ib400c-8node-allreduce-tuned.txt");
  const double tuned_gmae = blind_percent(tuned, shipped_model(8, "", "", 24));
  EXPECT_LE(tuned_gmae, 13.0);
  EXPECT_NEAR(tuned_gmae, blind_percent(tuned, shipped_model(8)), 0.01);
  const auto ring = cluster_sweep("ib400c-2node-allreduce-ring-tuned.txt");
  const double ring_gmae = blind_percent(ring, shipped_model(2, "ring", "", 24));
  EXPECT_LE(ring_gmae, 22.5);
  EXPECT_NEAR(ring_gmae, blind_percent(ring, shipped_model(2, "ring")), 0.01);
  const auto many =
      test_support::public_nccl_sweep("roce-128node/nccl322-h100-128node-allreduce-ring-ll128.txt");
  const double many_gmae = blind_percent(many, shipped_model(128, "ring", "LL128", 32));
  EXPECT_LE(many_gmae, 20.5);
  EXPECT_NEAR(many_gmae, blind_percent(many, shipped_model(128, "ring", "LL128")), 0.01);
}

TEST(ManyNodeInfiniBand, ForcedRingIsCarriedNotTheMeasuredTreeSweep) {
  // The shipped 2-node curve ran NVLS-tree (busbw 467 GB/s at 8 GiB, above the NICs' 400). A run
  // with the ring forced on that same shape is bound by the NICs: it must be carried by the
  // model, not read back from the tree's measurement.
  const std::vector<int> ranks = [] {
    std::vector<int> all(16);
    for (int rank = 0; rank < 16; ++rank)
      all[rank] = rank;
    return all;
  }();
  const Bytes bytes = Bytes{8} << 30;
  const double bus_bytes = static_cast<double>(bytes) * bus_factor(CollectiveKind::kAllReduce, 16);
  const double own_choice_GBps =
      bus_bytes /
      (1e3 * shipped_model(2).predict(CollectiveKind::kAllReduce, bytes, ranks).duration_us);
  const double ring_GBps =
      bus_bytes /
      (1e3 *
       shipped_model(2, "ring").predict(CollectiveKind::kAllReduce, bytes, ranks).duration_us);
  std::cout << "2 nodes, 8 GiB: NCCL's choice " << own_choice_GBps << " GB/s, ring " << ring_GBps
            << " GB/s\n";
  EXPECT_GT(own_choice_GBps, 400.0);
  EXPECT_LE(ring_GBps, 400.0);
}

TEST(ManyNodeInfiniBand, EightNodesFromTheClustersTwoAndFourNodes) {
  // Declared fit data: the cluster's 2- and 4-node default sweeps plus the 1-node H200 NVSwitch
  // sweep; held: its 8-node sweeps.
  const std::vector<CollectiveSweep> training = {
      read_nccl_tests_log(
          (kShared / "nccl-tests/azure-ndh200v5-1node-allreduce-busbw.txt").string())
          .sweep,
      cluster_sweep("ib400c-2node-allreduce.txt"), cluster_sweep("ib400c-4node-allreduce.txt")};
  const auto topology = hgx_h100();
  const NcclSettings settings = topology_nccl_settings(topology);
  const auto held = predict_held_out(nominal_fabric(topology), settings, training,
                                     cluster_sweep("ib400c-8node-allreduce.txt"), settings);
  const double gmae = gmae_percent(held.points);
  std::cout << "8 nodes from the cluster's 1/2/4: " << gmae << "%\n";
  EXPECT_LE(gmae, 4.5);
  // The tuned 8-node run from the same default training sweeps: tuning is outside the model.
  const auto tuned = predict_held_out(nominal_fabric(topology), settings, training,
                                      cluster_sweep("ib400c-8node-allreduce-tuned.txt"), settings);
  std::cout << "tuned 8 nodes from the cluster's default 1/2/4: " << gmae_percent(tuned.points)
            << "%\n";
  EXPECT_LE(gmae_percent(tuned.points), 26.5);
}

TEST(ManyNodeInfiniBand, LeaveOneNodeCountOutInsideTheCluster) {
  // Each default sweep from the 1-node H200 NVSwitch sweep and the cluster's other two.
  const std::vector<CollectiveSweep> sweeps = {
      read_nccl_tests_log(
          (kShared / "nccl-tests/azure-ndh200v5-1node-allreduce-busbw.txt").string())
          .sweep,
      cluster_sweep("ib400c-2node-allreduce.txt"), cluster_sweep("ib400c-4node-allreduce.txt"),
      cluster_sweep("ib400c-8node-allreduce.txt")};
  const auto topology = hgx_h100();
  const NcclSettings settings = topology_nccl_settings(topology);
  const std::vector<std::string> held = {sweeps[1].name, sweeps[2].name, sweeps[3].name};
  const auto results = leave_one_out(nominal_fabric(topology), settings, sweeps, held, settings);
  ASSERT_EQ(results.size(), 3u);
  const double bounds[] = {5.5, 8.0, 4.5};
  for (std::size_t i = 0; i < results.size(); ++i) {
    const double gmae = gmae_percent(results[i].points);
    std::cout << results[i].name << " (leave one out): " << gmae << "%\n";
    EXPECT_LE(gmae, bounds[i]) << results[i].name;
  }
}

}  // namespace
}  // namespace perfsim::collectives
