// Issue 17 acceptance, task "leave one node count out on every multi-node fixture": the public
// AWS p5 EFA sweeps (all-reduce and all-to-all at 2, 4, 8, 16 and 32 nodes) each predicted from
// curves fitted and a fabric calibrated on the other node counts plus the in-node H100 NVSwitch
// sweep (Azure ND H100 v5), never on the held one. Two fabrics: aws-p5-efa.json, the cluster's
// own (its runs load aws-ofi-nccl's tuner: training and held sweeps priced with it), and
// hgx-h100.json (NCCL's own choice). Each bound is the out-of-sample GMAE that
// collectives/README.md reports, rounded up to the next half percent; the 6% is met
// where the bound is <= 6.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "collectives/bus_factor.hpp"
#include "collectives/curve_transfer.hpp"
#include "collectives/error_table.hpp"
#include "collectives/nccl_fabric.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "support/public_nccl_sweeps.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {
namespace {

const std::filesystem::path kSource(PERFSIM_SOURCE_DIR);

std::vector<CollectiveSweep> p5_sweeps(const std::string& collective) {
  std::vector<CollectiveSweep> sweeps = {
      test_support::public_nccl_sweep("in-node/azure-ndh100v5-1node-allreduce-busbw.txt")};
  for (int nodes : {2, 4, 8, 16, 32})
    sweeps.push_back(test_support::public_nccl_sweep("aws-p5-efa/tables/aws-p5-efa-" +
                                                     std::to_string(nodes) + "node-" + collective +
                                                     "-busbw.txt"));
  return sweeps;
}

// The topology's NCCL settings (a tuner plugin) describe the held and the training runs alike.
std::vector<HeldOutResult> node_counts_out(const std::vector<CollectiveSweep>& sweeps,
                                           const char* topology_file) {
  std::vector<std::string> held;
  for (const auto& sweep : sweeps) {
    if (sweep.n_nodes > 1)
      held.push_back(sweep.name);
  }
  const auto topology =
      topology::load_topology((kSource / "configs/topologies" / topology_file).string());
  const NcclSettings settings = topology_nccl_settings(topology);
  return leave_one_out(nominal_fabric(topology), settings, sweeps, held, settings);
}

void print(const std::vector<HeldOutResult>& results) {
  std::vector<ErrorTableRow> rows;
  for (const auto& result : results) {
    std::string from;
    for (const auto& name : result.references)
      from += (from.empty() ? "" : " + ") + name;
    rows.push_back({result.name + " <- " + from, summarize_by_region(result.points)});
    for (const auto& point : result.points) {
      const double bus_bytes = point.bytes * bus_factor(result.kind, result.n_ranks);
      std::printf("  %s %12llu B  measured %8.2f GB/s  predicted %8.2f GB/s\n", result.name.c_str(),
                  static_cast<unsigned long long>(point.bytes),
                  bus_bytes / (1e3 * point.measured_us), bus_bytes / (1e3 * point.predicted_us));
    }
  }
  std::cout << format_error_table(rows);
}

void expect_within(const std::vector<HeldOutResult>& results,
                   const std::map<int, double>& bound_percent_by_nodes) {
  ASSERT_EQ(results.size(), bound_percent_by_nodes.size());
  for (const auto& result : results) {
    const double gmae_percent = 100.0 * summarize_by_region(result.points).all.gmae;
    EXPECT_LE(gmae_percent, bound_percent_by_nodes.at(result.n_nodes)) << result.name;
  }
}

TEST(CollectiveNodeCountOut, AwsP5AllReduceUnderTheClustersTuner) {
  const auto results = node_counts_out(p5_sweeps("allreduce"), "aws-p5-efa.json");
  print(results);
  expect_within(results, {{2, 9.0}, {4, 7.0}, {8, 3.5}, {16, 3.0}, {32, 2.5}});
}

TEST(CollectiveNodeCountOut, AwsP5AllReduceAsNcclsOwnChoice) {
  const auto results = node_counts_out(p5_sweeps("allreduce"), "hgx-h100.json");
  print(results);
  expect_within(results, {{2, 3.0}, {4, 3.5}, {8, 7.0}, {16, 3.0}, {32, 4.5}});
}

TEST(CollectiveNodeCountOut, AwsP5AllToAll) {
  // aws-ofi-nccl's tuner has no all-to-all regions: both topologies give these figures.
  const auto results = node_counts_out(p5_sweeps("alltoall"), "aws-p5-efa.json");
  print(results);
  expect_within(results, {{2, 3.5}, {4, 3.5}, {8, 5.0}, {16, 1.5}, {32, 8.0}});
}

}  // namespace
}  // namespace perfsim::collectives
