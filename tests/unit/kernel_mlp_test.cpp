// MLP kernel models: the trainer fits a synthetic kernel time with a step discontinuity at
// multiples of 8 (the tensor-core alignment effect of seed 003 Sec. 4.3, Fig. 9) to under 3%
// GMAE when the modulo one-hot features of seed 003 Table 3 are used, and beats the same MLP
// without them; a trained model round-trips through the assets HDF5 bit-exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "devices/device_spec.hpp"
#include "hdf5/column_table.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/kernel_predictor.hpp"
#include "kernels/mlp_asset.hpp"
#include "kernels/mlp_trainer.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

// Time of a GEMM-like kernel with sizes m, n: a launch floor plus work proportional to m n,
// 1.5x slower when m is not a multiple of 8.
double synthetic_time_us(double m, double n) {
  const bool aligned = static_cast<long>(m) % 8 == 0;
  return 3.0 + m * n / 2000.0 * (aligned ? 1.0 : 1.5);
}

TrainingSet synthetic_set(std::size_t count) {
  std::mt19937_64 random(42);
  std::uniform_int_distribution<int> size(8, 512);
  std::bernoulli_distribution multiple_of_8(0.5);  // many aligned sizes, as in real models
  TrainingSet set;
  for (std::size_t i = 0; i < count; ++i) {
    double m = size(random);
    if (multiple_of_8(random))
      m = 8 * std::max(1, static_cast<int>(m) / 8);
    const double n = size(random);
    set.sizes.push_back({m, n});
    set.dtypes.push_back(DType::kFloat16);
    set.time_us.push_back(synthetic_time_us(m, n));
  }
  return set;
}

MlpKernelAsset synthetic_template(std::int64_t modulo) {
  MlpKernelAsset asset;
  asset.name = modulo ? "synthetic-modulo" : "synthetic-plain";
  asset.kernel_kind = "synthetic";
  asset.device = "none";
  asset.features.sizes = {{"m", modulo}, {"n", modulo}};
  asset.training_source = "synthetic_time_us in kernel_mlp_test.cpp";
  return asset;
}

TrainingPlan quick_plan() {
  TrainingPlan plan;
  plan.candidates = {{2, 64, 3e-3, 150, 64, 1}};
  return plan;
}

TEST(KernelMlp, ModuloFeaturesFitAStepDiscontinuity) {
  const TrainingSet set = synthetic_set(2500);
  const TrainingReport with_modulo = train_kernel_asset(set, synthetic_template(8), quick_plan());
  const TrainingReport plain = train_kernel_asset(set, synthetic_template(0), quick_plan());
  std::cout << "held-back GMAE with modulo " << with_modulo.held_back.gmae_pct << "% (MAPE "
            << with_modulo.held_back.mape_pct << "%), without " << plain.held_back.gmae_pct
            << "% (MAPE " << plain.held_back.mape_pct << "%)\n";
  EXPECT_EQ(with_modulo.held_back.samples, 500u);
  EXPECT_LT(with_modulo.held_back.gmae_pct, 3.0);
  EXPECT_LT(with_modulo.held_back.gmae_pct, plain.held_back.gmae_pct);
  EXPECT_LT(with_modulo.held_back.mape_pct, plain.held_back.mape_pct);
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void expect_same_bits(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  ASSERT_EQ(a.rows(), b.rows());
  ASSERT_EQ(a.cols(), b.cols());
  for (Eigen::Index i = 0; i < a.size(); ++i)
    EXPECT_TRUE(same_bits(a.data()[i], b.data()[i])) << i;
}

TEST(KernelMlp, AssetRoundTripsBitExactly) {
  TrainingPlan plan = quick_plan();
  plan.candidates[0].epochs = 5;
  TrainingSet set = synthetic_set(200);
  MlpKernelAsset asset = synthetic_template(8);
  asset.features.dtypes = {DType::kFloat16, DType::kBFloat16};
  const TrainingReport report = train_kernel_asset(set, asset, plan);
  const std::string path =
      (std::filesystem::temp_directory_path() / "perfsim_kernel_mlp_roundtrip.h5").string();
  std::filesystem::remove(path);
  write_mlp_asset(path, report.asset);
  EXPECT_EQ(list_mlp_assets(path), std::vector<std::string>{"synthetic-modulo"});
  const MlpKernelAsset back = read_mlp_asset(path, "synthetic-modulo");
  std::filesystem::remove(path);

  EXPECT_EQ(back.kernel_kind, "synthetic");
  EXPECT_EQ(back.training_source, report.asset.training_source);
  EXPECT_EQ(back.features.dtypes, report.asset.features.dtypes);
  ASSERT_EQ(back.features.sizes.size(), 2u);
  EXPECT_EQ(back.features.sizes[1].modulo, 8);
  EXPECT_TRUE(back.features.sizes[1].log_scale);
  EXPECT_TRUE(same_bits(back.gmae_pct, report.asset.gmae_pct));
  ASSERT_EQ(back.mlp.layers.size(), report.asset.mlp.layers.size());
  for (std::size_t i = 0; i < back.mlp.layers.size(); ++i) {
    expect_same_bits(back.mlp.layers[i].weights, report.asset.mlp.layers[i].weights);
    expect_same_bits(back.mlp.layers[i].bias, report.asset.mlp.layers[i].bias);
  }
  expect_same_bits(back.mlp.input_mean, report.asset.mlp.input_mean);
  expect_same_bits(back.mlp.input_scale, report.asset.mlp.input_scale);
  EXPECT_TRUE(same_bits(back.mlp.target_mean, report.asset.mlp.target_mean));
  EXPECT_TRUE(same_bits(back.mlp.target_scale, report.asset.mlp.target_scale));
  const std::vector<double> sizes{96, 200};
  EXPECT_TRUE(same_bits(back.predict_us(sizes, DType::kFloat16),
                        report.asset.predict_us(sizes, DType::kFloat16)));
}

TEST(KernelMlp, EmbeddingFeaturesTakeLogSizesAndRawReuseFactors) {
  const FeatureDefinition definition = embedding_features();
  ASSERT_EQ(definition.width(), 4u + 17u);
  std::vector<double> values{1024, 1 << 20, 16, 64};
  for (int bin = 0; bin < 17; ++bin)
    values.push_back(bin == 1 ? 0.25 : (bin == 0 ? 0.75 : 0.0));
  const Eigen::RowVectorXd row = definition.encode(values, DType::kUnknown);
  EXPECT_DOUBLE_EQ(row[0], 10.0);  // log2 B
  EXPECT_DOUBLE_EQ(row[1], 20.0);  // log2 E
  EXPECT_DOUBLE_EQ(row[2], 4.0);   // log2 L
  EXPECT_DOUBLE_EQ(row[3], 6.0);   // log2 D
  EXPECT_DOUBLE_EQ(row[4], 0.75);  // rf bin [0, 1), as given
  EXPECT_DOUBLE_EQ(row[5], 0.25);  // rf bin [1, 2)
}

TEST(KernelMlp, ModuloFeaturesAreOneHot) {
  FeatureDefinition definition;
  definition.sizes = {{"m", 8}, {"n", 0}};
  definition.dtypes = {DType::kFloat32, DType::kFloat16};
  ASSERT_EQ(definition.width(), 1u + 8u + 1u + 2u);
  const std::vector<double> sizes{12, 64};
  const Eigen::RowVectorXd row = definition.encode(sizes, DType::kFloat16);
  EXPECT_DOUBLE_EQ(row[0], std::log2(12.0));
  for (int r = 0; r < 8; ++r)
    EXPECT_EQ(row[1 + r], r == 4 ? 1.0 : 0.0);  // 12 % 8 = 4
  EXPECT_DOUBLE_EQ(row[9], 6.0);                // log2(64)
  EXPECT_EQ(row[10], 0.0);
  EXPECT_EQ(row[11], 1.0);
}

}  // namespace
}  // namespace perfsim::kernels

namespace perfsim::kernels {
namespace {

// Benchmark HDF5 -> trained GEMM asset -> predictor: the predictor names the MLP for the
// device it was trained on and falls back to the analytical model elsewhere. The "benchmark"
// here is the analytical model's own output (no GPU in the test), so only the plumbing and
// the file layout are checked, not accuracy on real data.
TEST(KernelMlpGemm, BenchmarkFileToPredictor) {
  const std::string folder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";
  const auto v100 = devices::find_device(folder, "V100-SXM2");
  GemmBenchmark benchmark{"V100-SXM2", "analytical-gemm (test data)", {}};
  std::mt19937_64 random(3);
  std::uniform_int_distribution<int> exponent(6, 12);
  for (int i = 0; i < 300; ++i) {
    GemmWork work{1 << exponent(random), 1 << exponent(random), 1 << exponent(random), 1,
                  DType::kFloat16};
    benchmark.samples.push_back(
        {work.m, work.n, work.k, 1, DType::kFloat16, analytical_gemm_duration_us(work, v100)});
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / "perfsim_kernel_gemm_bench.h5").string();
  std::filesystem::remove(path);
  write_gemm_benchmark(path, benchmark);
  const GemmBenchmark back = read_gemm_benchmark(path);
  std::filesystem::remove(path);
  ASSERT_EQ(back.samples.size(), 300u);
  EXPECT_EQ(back.samples[7].k, benchmark.samples[7].k);
  EXPECT_EQ(back.device, "V100-SXM2");

  TrainingPlan plan;
  plan.candidates = {{2, 32, 3e-3, 20, 32, 1}};
  const TrainingReport report = train_gemm_asset(back, path, 8, plan);
  EXPECT_EQ(report.asset.name, "gemm-V100-SXM2");
  EXPECT_EQ(report.held_back.samples, 60u);
  const KernelSpec kernel{"gemm:aten::mm", KernelCategory::kGemm,
                          GemmWork{1024, 1024, 1024, 1, DType::kFloat16}};
  EXPECT_EQ(KernelPredictor(v100, {report.asset}).predict(kernel).model, "mlp:gemm-V100-SXM2");
  // fp32 was not in the benchmark: the analytical model answers.
  const KernelSpec fp32{"gemm:aten::mm", KernelCategory::kGemm,
                        GemmWork{1024, 1024, 1024, 1, DType::kFloat32}};
  EXPECT_EQ(KernelPredictor(v100, {report.asset}).predict(fp32).model, "analytical-gemm");
  const auto a100 = devices::find_device(folder, "A100-80GB");
  EXPECT_EQ(KernelPredictor(a100, {report.asset}).predict(kernel).model, "analytical-gemm");
}

TEST(KernelMlpGemm, BenchmarkWithoutTimeColumnIsRejected) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "perfsim_kernel_gemm_bad.h5").string();
  std::filesystem::remove(path);
  h5::ColumnTable table;
  for (const char* column : {"m", "n", "k", "batch"})
    table.add(column, std::vector<std::int64_t>{64});
  table.add("dtype", std::vector<std::string>{"fp16"});
  table.attributes = {{"device", "V100-SXM2"}, {"source", "hand"}};
  h5::write_table(path, kGemmBenchmarkGroup, table);
  try {
    read_gemm_benchmark(path);
    ADD_FAILURE() << "accepted a table without time_us";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "/benchmarks/gemm/time_us");
    EXPECT_EQ(error.problem(), "missing column");
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace perfsim::kernels
