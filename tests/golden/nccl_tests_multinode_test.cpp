// Issue 4 multi-node extrapolation: fit the single-node H100-class curve (Azure ND H200 v5) and
// the 2-node IB sweep, then predict the 4-node IB sweep without refitting, through the HGX H100
// topology and the benchmark/asset HDF5 round trip. The GMAE is printed; the only assertions
// are that the pipeline holds together and that the prediction is in a sane range.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "assets/collective_curve_assets.hpp"
#include "benchmark_data/collective_benchmark_table.hpp"
#include "collectives/collective_model.hpp"
#include "collectives/error_table.hpp"
#include "collectives/nccl_tests_log.hpp"

namespace perfsim::collectives {
namespace {

const std::filesystem::path kShared = std::filesystem::path(PERFSIM_SHARED_DATA_DIR) / "nccl-tests";

CollectiveSweep import(const std::string& name, const std::string& bench) {
  const auto path = kShared / name;
  if (!std::filesystem::exists(path))
    throw std::runtime_error("missing fixture " + path.string());
  benchmark_data::write_collective_sweep(bench, read_nccl_tests_log(path.string()).sweep);
  return benchmark_data::read_collective_sweep(bench, std::filesystem::path(name).stem().string());
}

TEST(NcclTestsMultiNode, FitOneAndTwoNodesPredictFour) {
  const auto dir = std::filesystem::temp_directory_path() / "perfsim_nccl_multinode_test";
  std::filesystem::create_directories(dir);
  const std::string bench = (dir / "bench.h5").string();
  const std::string assets = (dir / "assets.h5").string();
  std::filesystem::remove(bench);

  CurveSet fitted;
  assets::ResidualsByCurve residuals;
  for (const char* name :
       {"azure-ndh200v5-1node-allreduce-busbw.txt", "h100-ib400-2node-allreduce.txt"}) {
    const auto sweep = import(name, bench);
    auto curve = fit_sweep(sweep);
    residuals[curve.name] = predict_with_curve(curve, sweep);
    fitted.emplace(curve.name, std::move(curve));
  }
  assets::write_collective_curves(assets, fitted, residuals, true);
  const CurveSet curves = assets::read_collective_curves(assets);
  ASSERT_EQ(curves.size(), 2u);
  // The HDF5 round trip keeps every parameter.
  for (const auto& [name, curve] : fitted) {
    EXPECT_DOUBLE_EQ(curves.at(name).curve.duration_us(12345.0), curve.curve.duration_us(12345.0));
    EXPECT_EQ(assets::read_collective_residuals(assets).at(name).size(), residuals.at(name).size());
  }

  const auto topology_path =
      std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/topologies/hgx-h100-4node.json";
  const CollectiveModel model(topology::load_topology(topology_path.string()), curves);
  const auto four_nodes = import("h100-ib400-4node-allreduce.txt", bench);
  const auto two_nodes = benchmark_data::read_collective_sweep(bench, "h100-ib400-2node-allreduce");
  std::vector<ErrorTableRow> rows;
  const auto two_node_points = predict_sweep(
      CollectiveModel(topology::with_node_count(model.topology(), 2), curves), two_nodes);
  rows.push_back({"2-node (fitted)", summarize_by_region(two_node_points)});
  const auto four_node_points = predict_sweep(model, four_nodes);
  const RegionErrors four = summarize_by_region(four_node_points);
  rows.push_back({"4-node (predicted)", four});
  std::cout << format_error_table(rows);
  for (const auto& point : four_node_points) {
    if (point.in_place)
      std::cout << "  " << point.bytes << " B: measured " << point.measured_us << " us, predicted "
                << point.predicted_us << " us\n";
  }
  EXPECT_EQ(four.all.count, 64u);
  EXPECT_LT(four.all.gmae, 0.5) << "extrapolation is off by more than 2x on average";
}

}  // namespace
}  // namespace perfsim::collectives
