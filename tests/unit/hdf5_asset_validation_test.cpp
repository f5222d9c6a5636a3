// Issue 20: HDF5 kernel-model assets with a non-numeric or negative layer shape (std::stol
// threw invalid_argument, exit 1, or Eigen was asked for a negative matrix) or a NaN weight (every
// prediction NaN) are InputErrors naming the file and the table.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "hdf5/column_table.hpp"
#include "kernels/mlp_asset.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

// A one-layer linear model over the features of two sizes.
MlpKernelAsset tiny_asset() {
  MlpKernelAsset asset;
  asset.name = "tiny";
  asset.kernel_kind = "synthetic";
  asset.device = "none";
  asset.training_source = "hdf5_asset_validation_test.cpp";
  asset.features.sizes = {{"m", 0}, {"n", 0}};
  asset.features.dtypes = {DType::kFloat16};
  const auto width = static_cast<Eigen::Index>(asset.features.width());
  asset.mlp.input_mean = Eigen::VectorXd::Zero(width);
  asset.mlp.input_scale = Eigen::VectorXd::Ones(width);
  asset.mlp.layers.push_back({Eigen::MatrixXd::Constant(1, width, 0.5), Eigen::VectorXd::Ones(1)});
  return asset;
}

class MlpAssetFile : public testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::remove(path_);
    write_mlp_asset(path_, tiny_asset());
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // Rewrites one table of the asset with `edit` applied.
  template <class Edit>
  void edit_table(const std::string& table_path, Edit edit) {
    h5::ColumnTable table = h5::read_table(path_, table_path);
    edit(table);
    h5::write_table(path_, table_path, table);
  }

  void expect_rejected(const std::string& location) {
    try {
      read_mlp_asset(path_, "tiny");
      FAIL() << "accepted";
    } catch (const InputError& error) {
      EXPECT_EQ(error.file(), path_);
      EXPECT_NE(error.location().find(location), std::string::npos) << error.what();
    }
  }

  // One file per test and process: CTest runs the tests of this file in parallel processes.
  const std::string path_ =
      (std::filesystem::temp_directory_path() /
       ("perfsim_hdf5_asset_validation_" +
        std::string(testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
        std::to_string(::getpid()) + ".h5"))
          .string();
};

TEST_F(MlpAssetFile, TheUnmutatedAssetLoads) {
  EXPECT_EQ(read_mlp_asset(path_, "tiny").mlp.layers.size(), 1u);
}

TEST_F(MlpAssetFile, NonNumericLayerShapeIsAnInputError) {
  edit_table("/kernel_models/tiny/layer_0",
             [](h5::ColumnTable& table) { table.attributes["rows"] = "one"; });
  expect_rejected("/kernel_models/tiny/layer_0/rows");
}

TEST_F(MlpAssetFile, NegativeLayerShapeIsAnInputError) {
  edit_table("/kernel_models/tiny/layer_0",
             [](h5::ColumnTable& table) { table.attributes["cols"] = "-3"; });
  expect_rejected("/kernel_models/tiny/layer_0/cols");
}

TEST_F(MlpAssetFile, NanWeightIsAnInputError) {
  edit_table("/kernel_models/tiny/layer_0", [](h5::ColumnTable& table) {
    std::vector<double> values = table.doubles("values");
    values[0] = std::numeric_limits<double>::quiet_NaN();
    h5::ColumnTable replaced;
    replaced.attributes = table.attributes;
    replaced.add("values", std::move(values));
    table = std::move(replaced);
  });
  expect_rejected("/kernel_models/tiny/layer_0/values[0]");
}

TEST_F(MlpAssetFile, HugeLayerCountIsAnInputError) {
  edit_table("/kernel_models/tiny/features",
             [](h5::ColumnTable& table) { table.attributes["layers"] = "99999999999999999999"; });
  expect_rejected("/kernel_models/tiny/features/layers");
}

}  // namespace
}  // namespace perfsim::kernels
