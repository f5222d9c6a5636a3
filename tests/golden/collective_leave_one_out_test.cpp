// Issue 17 acceptance, out of sample: (1) leave one node count out on the H100 + 400G IB
// all-reduce sweeps (fit curves and calibrate the fabric on the other node counts, including the
// single-node NVSwitch sweep, predict the held one): GMAE <= 6% each; (2) A100 all-reduce in
// one node fitted on 2, 4, 6 and 8 GPUs predicts 3, 5 and 7 GPUs within 5% GMAE each. The
// tolerances are the issue's; collectives/README.md reports the figures this test prints.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

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
