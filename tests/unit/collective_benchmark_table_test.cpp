// Benchmark HDF5 (/benchmarks/collective/<name>) and model assets (/collectives/curves):
// what is written is read back, with units and provenance.
#include <gtest/gtest.h>

#include <filesystem>

#include "assets/collective_curve_assets.hpp"
#include "benchmark_data/collective_benchmark_table.hpp"
#include "hdf5/column_table.hpp"
#include "perfsim/error.hpp"

namespace perfsim {
namespace {

collectives::CollectiveSweep sample_sweep() {
  collectives::CollectiveSweep sweep;
  sweep.name = "toy-allgather";
  sweep.source_file = "toy.txt";
  sweep.kind = CollectiveKind::kAllGather;
  sweep.n_ranks = 4;
  sweep.n_nodes = 1;
  sweep.metadata = {{"hardware", "4x toy GPU"}, {"nccl", "2.99"}};
  for (int i = 0; i < 6; ++i)
    sweep.samples.push_back(
        {Bytes{1024} << (2 * i), 10.0 + i * i * 5.0, 1.0 + i, 0.75 + i, i % 2 == 1});
  return sweep;
}

TEST(CollectiveBenchmarkTable, RoundTripWithAttributes) {
  const auto path =
      (std::filesystem::temp_directory_path() / "perfsim_bench_table_test.h5").string();
  benchmark_data::write_collective_sweep(path, sample_sweep(), true);
  EXPECT_EQ(benchmark_data::list_collective_sweeps(path),
            std::vector<std::string>{"toy-allgather"});
  const auto back = benchmark_data::read_collective_sweep(path, "toy-allgather");
  EXPECT_EQ(back.kind, CollectiveKind::kAllGather);
  EXPECT_EQ(back.n_ranks, 4);
  ASSERT_EQ(back.samples.size(), 6u);
  EXPECT_EQ(back.samples[5].bytes, Bytes{1024} << 10);
  EXPECT_DOUBLE_EQ(back.samples[5].time_us, 135.0);
  EXPECT_TRUE(back.samples[5].in_place);
  EXPECT_EQ(back.metadata.at("nccl"), "2.99");
  const auto table = h5::read_table(path, "/benchmarks/collective/toy-allgather");
  EXPECT_EQ(table.attributes.at("device"), "4x toy GPU");
  EXPECT_EQ(table.attributes.at("source_file"), "toy.txt");
  EXPECT_EQ(table.units.at("time_us"), "us");
  EXPECT_EQ(table.units.at("busbw_GBps"), "GBps");
  EXPECT_THROW(benchmark_data::read_collective_sweep(path, "absent"), InputError);
}

TEST(CollectiveCurveAssets, RoundTripKeepsTheCurve) {
  const auto path =
      (std::filesystem::temp_directory_path() / "perfsim_curve_assets_test.h5").string();
  const auto sweep = sample_sweep();
  collectives::CurveSet curves;
  curves.emplace("toy",
                 collectives::FittedCurve{"toy",
                                          CollectiveKind::kAllGather,
                                          4,
                                          1,
                                          "toy.txt",
                                          collectives::PiecewiseSigmoidModel::from_free_parameters(
                                              4096, 1e7, 12.0, 80.0, 18.0, 0.7),
                                          {0.01, 0.02, 0.005, 0.04, 6}});
  assets::ResidualsByCurve residuals{
      {"toy", collectives::predict_with_curve(curves.at("toy"), sweep)}};
  assets::write_collective_curves(path, curves, residuals, true);
  const auto back = assets::read_collective_curves(path);
  ASSERT_EQ(back.count("toy"), 1u);
  for (double bytes : {100.0, 1e5, 1e9})
    EXPECT_DOUBLE_EQ(back.at("toy").curve.duration_us(bytes),
                     curves.at("toy").curve.duration_us(bytes));
  EXPECT_DOUBLE_EQ(back.at("toy").fit_error.gmae, 0.01);
  EXPECT_EQ(back.at("toy").measured_kind, CollectiveKind::kAllGather);
  EXPECT_EQ(assets::read_collective_residuals(path).at("toy").size(), 6u);
}

}  // namespace
}  // namespace perfsim
