// Issue 17 acceptance, out of sample: (1) leave one node count out on the H100 + 400G IB
// all-reduce sweeps (fit curves and calibrate the fabric on the other node counts, including the
// single-node NVSwitch sweep, predict the held one): GMAE <= 6% each; (2) A100 all-reduce in
// one node fitted on 2, 4, 6 and 8 GPUs predicts 3, 5 and 7 GPUs within 5% GMAE each. The
// tolerances are the issue's; collectives/README.md reports the figures this test prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "collectives/bus_factor.hpp"
#include "collectives/collective_csv.hpp"
#include "collectives/curve_transfer.hpp"
#include "collectives/error_table.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {
namespace {

const std::filesystem::path kShared = PERFSIM_SHARED_DATA_DIR;
const std::filesystem::path kSource = PERFSIM_SOURCE_DIR;

CollectiveSweep nccl_tests(const std::string& file) {
  return read_nccl_tests_log((kShared / "nccl-tests" / file).string()).sweep;
}

void print(const std::vector<HeldOutResult>& results) {
  std::vector<ErrorTableRow> rows;
  for (const auto& result : results) {
    std::string from;
    for (const auto& name : result.references)
      from += (from.empty() ? "" : " + ") + name;
    rows.push_back({result.name + " <- " + from, summarize_by_region(result.points)});
  }
  std::cout << format_error_table(rows);
}

TEST(CollectiveLeaveOneOut, H100InfinibandNodeCounts) {
  const std::vector<CollectiveSweep> sweeps = {
      nccl_tests("azure-ndh200v5-1node-allreduce-busbw.txt"),
      nccl_tests("h100-ib400-2node-allreduce.txt"), nccl_tests("h100-ib400-4node-allreduce.txt")};
  const auto topology =
      topology::load_topology((kSource / "configs/topologies/hgx-h100-2node.json").string());
  const std::vector<std::string> held = {"h100-ib400-2node-allreduce",
                                         "h100-ib400-4node-allreduce"};
  const auto results = leave_one_out(nominal_fabric(topology), {}, sweeps, held);
  print(results);
  for (const auto& result : results)
    EXPECT_LE(summarize_by_region(result.points).all.gmae, 0.06) << result.name;
}

// A misconfigured cluster (say NCCL without GPUDirect RDMA: NIC traffic bounced through host
// memory) must not pass for the healthy one. Its sweep is built from the measured 4-node sweep:
// bus bandwidth capped at a third of what the healthy run reached, 5 us more per call. The
// model fitted on the healthy 1- and 2-node sweeps must miss it by more than twice the 6% GMAE
// it is held to on healthy sweeps (so `validate collectives --max-gmae 6` flags it), and the
// bandwidth-bound sizes, where the misconfiguration lives, by far more.
TEST(CollectiveLeaveOneOut, MisconfiguredFabricIsFlagged) {
  const std::vector<CollectiveSweep> healthy = {
      nccl_tests("azure-ndh200v5-1node-allreduce-busbw.txt"),
      nccl_tests("h100-ib400-2node-allreduce.txt")};
  CollectiveSweep degraded = nccl_tests("h100-ib400-4node-allreduce.txt");
  double healthy_busbw_GBps = 0.0;
  const double factor = bus_factor(degraded.kind, degraded.n_ranks);
  for (const auto& sample : degraded.samples)
    healthy_busbw_GBps =
        std::max(healthy_busbw_GBps, sample.bytes * factor / (1e3 * sample.time_us));
  for (auto& sample : degraded.samples) {
    const double bus_bytes = sample.bytes * factor;
    sample.time_us = std::max(sample.time_us, bus_bytes / (1e3 * healthy_busbw_GBps / 3.0)) + 5.0;
  }
  degraded.name = "h100-ib400-4node-allreduce-no-gdr";
  const auto topology =
      topology::load_topology((kSource / "configs/topologies/hgx-h100-2node.json").string());
  const auto result = predict_held_out(nominal_fabric(topology), {}, healthy, degraded);
  print({result});
  const RegionErrors errors = summarize_by_region(result.points);
  EXPECT_GT(errors.all.gmae, 2 * 0.06);
  EXPECT_GT(errors.by_region[2].gmae, 0.5);
}

TEST(CollectiveLeaveOneOut, A100EvenGpuCountsPredictOdd) {
  const auto directory = kShared / "collectives" / "a100-dgx-allreduce";
  std::vector<CollectiveSweep> even;
  for (int gpus : {2, 4, 6, 8})
    even.push_back(read_collective_csv(
        (directory / ("allreduce-" + std::to_string(gpus) + "gpu.csv")).string()));
  const auto topology =
      topology::load_topology((kSource / "configs/topologies/dgx-a100.json").string());
  std::vector<HeldOutResult> results;
  for (int gpus : {3, 5, 7}) {
    const auto odd = read_collective_csv(
        (directory / ("allreduce-" + std::to_string(gpus) + "gpu.csv")).string());
    results.push_back(predict_held_out(nominal_fabric(topology), {}, even, odd));
  }
  print(results);
  for (const auto& result : results)
    EXPECT_LE(summarize_by_region(result.points).all.gmae, 0.05) << result.name;
}

}  // namespace
}  // namespace perfsim::collectives
