// Leave-one-out under a tuner plugin (collectives/README.md "Leave one node count out on every
// multi-node fixture"): the training sweeps ran with the cluster's tuner, so the calibration
// reads the trees' rate below its ring boundary (FabricCalibration::tree_net_scale), the curves
// are fitted with the tuner's step taken out (without_tuner_step), and the model puts the step
// back at the held rank count. All-to-all sweeps set the cost per remote peer
// (FabricCalibration::peer_latency_us). The sweeps here are the model's own, on a fabric whose
// trees reach 0.8 of the network and whose NICs 0.9 of line rate, run under a 48 MiB-per-rank
// tuner.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "collectives/curve_transfer.hpp"
#include "collectives/error_table.hpp"
#include "collectives/nccl_fabric.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

NcclFabric nominal_h100() {
  return nominal_fabric(topology::load_topology(
      (std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/topologies/hgx-h100-2node.json")
          .string()));
}

// The fabric the synthetic sweeps "ran" on.
NcclFabric measured_fabric() {
  FabricCalibration truth;
  truth.net_scale = 0.9;
  truth.tree_net_scale = 0.8;
  return calibrated(nominal_h100(), truth);
}

NcclSettings tuned() {
  NcclSettings settings;
  settings.tuner_ring_from_bytes_per_rank = 48 * kMiB;
  return settings;
}

// All-reduce on `nodes` x 8 GPUs, 1 KiB to 8 GiB, as the model prices it under `settings`.
CollectiveSweep model_sweep(int nodes, const NcclFabric& fabric, const NcclSettings& settings) {
  CollectiveSweep sweep;
  sweep.name = "synthetic-" + std::to_string(nodes) + "node";
  sweep.kind = CollectiveKind::kAllReduce;
  sweep.n_ranks = 8 * nodes;
  sweep.n_nodes = nodes;
  for (int power = 10; power <= 33; ++power) {
    const Bytes bytes = Bytes{1} << power;
    sweep.samples.push_back({bytes,
                             nccl_estimate(sweep.kind, static_cast<double>(bytes),
                                           {sweep.n_ranks, nodes}, fabric, settings)
                                 .time_us,
                             0.0, 0.0, false});
  }
  return sweep;
}

TEST(TunerCalibration, ReadsTheTreesRateBelowTheBoundary) {
  const NcclFabric truth = measured_fabric();
  const std::vector<CollectiveSweep> sweeps = {model_sweep(1, truth, tuned()),
                                               model_sweep(4, truth, tuned())};
  const FabricCalibration found = calibrate_fabric(nominal_h100(), tuned(), sweeps);
  // 4 nodes: the ring above 1.5 GiB sets the NICs, the trees at 1 GiB their share.
  EXPECT_NEAR(found.net_scale, 0.9, 0.005);
  EXPECT_NEAR(found.tree_net_scale, 0.8, 0.005);
  // Without the tuner nothing tells the two rates apart: the trees keep the ring's rate.
  EXPECT_EQ(calibrate_fabric(nominal_h100(), {}, sweeps).tree_net_scale, 1.0);
}

TEST(TunerCalibration, TwoNodesSayNothingAboutTheTrees) {
  // Two nodes are one exchange: the trees' share does not apply, so it is not read there.
  const NcclFabric truth = measured_fabric();
  const std::vector<CollectiveSweep> sweeps = {model_sweep(1, truth, tuned()),
                                               model_sweep(2, truth, tuned())};
  EXPECT_EQ(calibrate_fabric(nominal_h100(), tuned(), sweeps).tree_net_scale, 1.0);
}

TEST(TunerStep, TakingItOutGivesNcclsOwnChoice) {
  const NcclFabric truth = measured_fabric();
  const CollectiveSweep as_run = model_sweep(8, truth, tuned());
  const CollectiveSweep own_choice = model_sweep(8, truth, {});
  const CollectiveSweep detuned = without_tuner_step(as_run, truth, tuned());
  ASSERT_EQ(detuned.samples.size(), own_choice.samples.size());
  bool a_step_was_removed = false;
  for (std::size_t i = 0; i < detuned.samples.size(); ++i) {
    EXPECT_NEAR(detuned.samples[i].time_us / own_choice.samples[i].time_us, 1.0, 1e-12);
    a_step_was_removed |=
        std::abs(as_run.samples[i].time_us / own_choice.samples[i].time_us - 1.0) > 0.1;
  }
  EXPECT_TRUE(a_step_was_removed);
  // Without a tuner the sweep is left as it is.
  const CollectiveSweep untouched = without_tuner_step(as_run, truth, {});
  for (std::size_t i = 0; i < untouched.samples.size(); ++i)
    EXPECT_EQ(untouched.samples[i].time_us, as_run.samples[i].time_us);
}

TEST(TunerLeaveOneOut, TheStepMovesWithTheRankCount) {
  // Held: 8 nodes (tuner boundary 3 GiB); trained on 1, 4 (1.5 GiB) and 16 nodes (6 GiB).
  const NcclFabric truth = measured_fabric();
  const std::vector<CollectiveSweep> training = {model_sweep(1, truth, tuned()),
                                                 model_sweep(4, truth, tuned()),
                                                 model_sweep(16, truth, tuned())};
  const CollectiveSweep held = model_sweep(8, truth, tuned());
  const double with_tuner =
      summarize_by_region(predict_held_out(nominal_h100(), tuned(), training, held, tuned()).points)
          .all.gmae;
  // The old way: references taken as run with NCCL's own choice, curves fitted across the step.
  const double without =
      summarize_by_region(predict_held_out(nominal_h100(), tuned(), training, held).points)
          .all.gmae;
  std::cout << "held 8 nodes: GMAE " << 100 * with_tuner << "% with the tuner, " << 100 * without
            << "% without\n";
  EXPECT_LT(with_tuner, 0.02);
  EXPECT_LT(with_tuner, without);
}

TEST(PeerCalibration, AllToAllSweepsSetTheCostPerRemotePeer) {
  // All-to-all on 4 nodes run on a fabric whose messages cost 5 us per peer on another node:
  // the calibration reads it back (with the NICs' 0.9 at the largest size); an all-reduce sweep
  // says nothing about it.
  NcclFabric truth = measured_fabric();
  truth.peer_latency_us = 5.0;
  CollectiveSweep all_to_all = model_sweep(4, truth, {});
  all_to_all.kind = CollectiveKind::kAllToAll;
  for (auto& sample : all_to_all.samples)
    sample.time_us =
        nccl_estimate(all_to_all.kind, static_cast<double>(sample.bytes), {32, 4}, truth).time_us;
  const std::vector<CollectiveSweep> sweeps = {model_sweep(1, truth, {}), all_to_all};
  const FabricCalibration found = calibrate_fabric(nominal_h100(), {}, sweeps);
  EXPECT_NEAR(found.peer_latency_us, 5.0, 0.05);
  EXPECT_NEAR(found.net_scale, 0.9, 0.005);
  const std::vector<CollectiveSweep> all_reduce = {model_sweep(1, truth, {}),
                                                   model_sweep(4, truth, {})};
  EXPECT_EQ(calibrate_fabric(nominal_h100(), {}, all_reduce).peer_latency_us, 0.0);
}

}  // namespace
}  // namespace perfsim::collectives
