// Embedding-lookup MLP of seed 001 Sec. IV-C (features log2 B, E, L, D and the 17 reuse-factor
// bins of the batch): the /benchmarks/embedding table round-trips, the trainer fits synthetic
// benchmark data and beats the same MLP without the reuse features, assets round-trip, and
// KernelPredictor uses the MLP on its own device only.
//
// No GPU here: the "benchmark" is the seed 000 heuristic (kernels/embedding_heuristic.hpp) on a
// V100 times a reuse term the heuristic cannot see. With N = B L lookups touching
// E (1 - rf_0) distinct rows, a share h = 1 - E (1 - rf_0) / N of the lookups re-read a row
// the batch already read; the synthetic kernel saves 60% of the time of those, so
// t = heuristic x (1 - 0.6 h). Indices are drawn with a per-sample skew (row = E u^s, u
// uniform, s in [1, 8]) so h spans 0 to nearly 1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "devices/device_spec.hpp"
#include "hdf5/column_table.hpp"
#include "kernels/embedding_benchmark_table.hpp"
#include "kernels/embedding_heuristic.hpp"
#include "kernels/embedding_mlp.hpp"
#include "kernels/embedding_mlp_trainer.hpp"
#include "kernels/gemm_benchmark_table.hpp"
#include "kernels/kernel_predictor.hpp"
#include "kernels/uniform_reuse_factors.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

constexpr double kReusedLookupSaving = 0.6;

devices::DeviceSpec device(const std::string& name) {
  return devices::find_device(std::string(PERFSIM_SOURCE_DIR) + "/configs/devices", name);
}

std::string temp_path(const std::string& stem) {
  const std::string path = (std::filesystem::temp_directory_path() / (stem + ".h5")).string();
  std::filesystem::remove(path);
  return path;
}

double reused_lookup_share(const ReuseFactors& reuse, std::int64_t rows, double lookups) {
  const double distinct_rows = static_cast<double>(rows) * (1 - reuse[0]);
  return std::clamp(1 - distinct_rows / lookups, 0.0, 1.0);
}

EmbeddingBenchmark synthetic_benchmark(std::size_t count, std::size_t backward_count,
                                       std::uint64_t seed) {
  const devices::DeviceSpec v100 = device("V100-SXM2");
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int> batch_exponent(6, 10);
  std::uniform_real_distribution<double> rows_exponent(10, 20);
  std::uniform_int_distribution<int> pooling(1, 48);
  std::uniform_int_distribution<int> dim_exponent(4, 8);
  std::uniform_real_distribution<double> skew(1, 8);
  std::uniform_real_distribution<double> unit(0, 1);
  EmbeddingBenchmark benchmark{"V100-SXM2", "embedding heuristic x reuse term (test data)", {}};
  for (std::size_t i = 0; i < count + backward_count; ++i) {
    EmbeddingSample sample;
    sample.batch_size = std::int64_t{1} << batch_exponent(random);
    sample.num_embeddings = static_cast<std::int64_t>(std::exp2(rows_exponent(random)));
    sample.pooling = pooling(random);
    sample.dim = std::int64_t{1} << dim_exponent(random);
    sample.backward = i >= count;
    const double s = skew(random);
    const auto lookups = static_cast<std::size_t>(sample.batch_size * sample.pooling);
    std::vector<std::int64_t> indices(lookups);
    for (std::int64_t& index : indices)
      index = std::min(sample.num_embeddings - 1,
                       static_cast<std::int64_t>(static_cast<double>(sample.num_embeddings) *
                                                 std::pow(unit(random), s)));
    sample.reuse_factors = reuse_factor_histogram(indices, sample.num_embeddings);
    EmbeddingWork work;
    work.batch_size = sample.batch_size;
    work.rows = sample.num_embeddings;
    work.pooling_factor = sample.pooling;
    work.dim = sample.dim;
    work.backward = sample.backward;
    const double h =
        reused_lookup_share(sample.reuse_factors, sample.num_embeddings, double(lookups));
    sample.time_us = embedding_heuristic_duration_us(work, v100) * (1 - kReusedLookupSaving * h);
    benchmark.samples.push_back(sample);
  }
  return benchmark;
}

TrainingPlan quick_plan(int epochs) {
  TrainingPlan plan;
  plan.candidates = {{2, 64, 3e-3, epochs, 64, 1}};
  return plan;
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

TEST(EmbeddingBenchmarkTable, RoundTripsEveryColumn) {
  EmbeddingBenchmark benchmark = synthetic_benchmark(6, 4, 11);
  benchmark.samples[2].dtype = DType::kFloat16;
  benchmark.samples[3].pooling = 0.375;  // average pooling may be fractional
  const std::string path = temp_path("perfsim_embedding_bench_roundtrip");
  write_embedding_benchmark(path, benchmark);
  ASSERT_TRUE(has_embedding_benchmark(path));
  const h5::ColumnTable raw = h5::read_table(path, kEmbeddingBenchmarkGroup);
  const EmbeddingBenchmark back = read_embedding_benchmark(path);
  std::filesystem::remove(path);

  EXPECT_EQ(raw.units.at("time_us"), "us");
  EXPECT_EQ(raw.strings("direction")[9], "backward");
  EXPECT_EQ(back.device, benchmark.device);
  EXPECT_EQ(back.source, benchmark.source);
  ASSERT_EQ(back.samples.size(), benchmark.samples.size());
  for (std::size_t i = 0; i < back.samples.size(); ++i) {
    const EmbeddingSample& a = benchmark.samples[i];
    const EmbeddingSample& b = back.samples[i];
    EXPECT_EQ(b.batch_size, a.batch_size) << i;
    EXPECT_EQ(b.num_embeddings, a.num_embeddings) << i;
    EXPECT_TRUE(same_bits(b.pooling, a.pooling)) << i;
    EXPECT_EQ(b.dim, a.dim) << i;
    EXPECT_EQ(b.backward, a.backward) << i;
    EXPECT_EQ(b.dtype, a.dtype) << i;
    EXPECT_TRUE(same_bits(b.time_us, a.time_us)) << i;
    for (std::size_t bin = 0; bin < kReuseFactorBins; ++bin)
      EXPECT_TRUE(same_bits(b.reuse_factors[bin], a.reuse_factors[bin])) << i << " bin " << bin;
  }
}

TEST(EmbeddingBenchmarkTable, RejectsAHistogramThatDoesNotSumToOne) {
  EmbeddingBenchmark benchmark = synthetic_benchmark(3, 0, 5);
  benchmark.samples[1].reuse_factors[0] -= 0.25;
  const std::string path = temp_path("perfsim_embedding_bench_bad_rf");
  write_embedding_benchmark(path, benchmark);
  try {
    read_embedding_benchmark(path);
    ADD_FAILURE() << "a histogram summing to 0.75 was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("row 1"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("sum"), std::string::npos) << error.what();
  }
  std::filesystem::remove(path);
}

TEST(EmbeddingBenchmarkTable, RejectsAMissingReuseColumnAndAnUnknownDirection) {
  const std::string path = temp_path("perfsim_embedding_bench_bad_columns");
  write_embedding_benchmark(path, synthetic_benchmark(2, 0, 5));
  h5::ColumnTable table = h5::read_table(path, kEmbeddingBenchmarkGroup);
  table.columns.erase("rf_7");
  std::erase(table.column_order, "rf_7");
  h5::write_table(path, kEmbeddingBenchmarkGroup, table);
  EXPECT_THROW(read_embedding_benchmark(path), InputError);

  write_embedding_benchmark(path, synthetic_benchmark(2, 0, 5));
  table = h5::read_table(path, kEmbeddingBenchmarkGroup);
  table.columns["direction"] = std::vector<std::string>{"forward", "sideways"};
  h5::write_table(path, kEmbeddingBenchmarkGroup, table);
  EXPECT_THROW(read_embedding_benchmark(path), InputError);
  std::filesystem::remove(path);
}

// N lookups uniform over E rows: a row's count is Poisson(N / E) in the limit; at N = E the
// bins are P(0) = e^-1, P(1) = e^-1, P(2..3) = e^-1 (1/2 + 1/6), P(4..7) = e^-1 (1/24 + 1/120
// + 1/720 + 1/5040). The sampled histogram of such indices agrees to within sampling noise.
TEST(UniformReuseFactors, MatchPoissonAndSampledIndices) {
  const ReuseFactors expected = uniform_reuse_factors(200000, 200000);
  const double e = std::exp(-1.0);
  EXPECT_NEAR(expected[0], e, 1e-12);
  EXPECT_NEAR(expected[1], e, 1e-12);
  EXPECT_NEAR(expected[2], e * (1.0 / 2 + 1.0 / 6), 1e-12);
  EXPECT_NEAR(expected[3], e * (1.0 / 24 + 1.0 / 120 + 1.0 / 720 + 1.0 / 5040), 1e-12);

  std::mt19937_64 random(9);
  std::uniform_int_distribution<std::int64_t> row(0, 199999);
  std::vector<std::int64_t> indices(200000);
  for (std::int64_t& index : indices)
    index = row(random);
  const ReuseFactors sampled = reuse_factor_histogram(indices, 200000);
  for (std::size_t bin = 0; bin < kReuseFactorBins; ++bin)
    EXPECT_NEAR(sampled[bin], expected[bin], 0.004) << bin;

  const ReuseFactors none = uniform_reuse_factors(0, 1000);
  EXPECT_EQ(none[0], 1.0);
  // 2^20 lookups on one row: every row (the one) lands in the open last bin.
  EXPECT_NEAR(uniform_reuse_factors(1 << 20, 1)[16], 1.0, 1e-12);
}

// The acceptance figure: held-back GMAE of the reuse-aware MLP, against the same MLP given
// only log2 B, E, L, D. Measured (2000 forward samples, 400 held back, 2 x 64 ReLU, Adam 3e-3,
// 200 epochs): data seed 21 gives 4.30% GMAE / 8.87% MAPE with reuse factors, 7.61% / 12.38%
// sizes only; seeds 22 and 23 gave 4.07% vs 7.89% and 5.03% vs 9.37%. The bounds (6.5%, and
// under 0.8 x the sizes-only GMAE) leave margin over all three.
TEST(KernelEmbeddingMlp, ReuseFeaturesBeatSizesOnly) {
  const EmbeddingBenchmark benchmark = synthetic_benchmark(2000, 0, 21);
  const TrainingSet with_reuse = embedding_training_set(benchmark, false);
  TrainingSet sizes_only = with_reuse;
  for (std::vector<double>& row : sizes_only.sizes)
    row.resize(4);

  MlpKernelAsset reuse_template;
  reuse_template.name = "embedding-reuse";
  reuse_template.kernel_kind = embedding_asset_kind(false);
  reuse_template.device = benchmark.device;
  reuse_template.features = embedding_features();
  reuse_template.features.dtypes = {DType::kFloat32};
  MlpKernelAsset plain_template = reuse_template;
  plain_template.name = "embedding-sizes-only";
  plain_template.features.sizes.resize(4);

  const TrainingReport reuse = train_kernel_asset(with_reuse, reuse_template, quick_plan(200));
  const TrainingReport plain = train_kernel_asset(sizes_only, plain_template, quick_plan(200));
  std::cout << "held-back GMAE with reuse factors " << reuse.held_back.gmae_pct << "% (MAPE "
            << reuse.held_back.mape_pct << "%), sizes only " << plain.held_back.gmae_pct
            << "% (MAPE " << plain.held_back.mape_pct << "%)\n";
  EXPECT_EQ(reuse.held_back.samples, 400u);
  EXPECT_LT(reuse.held_back.gmae_pct, 6.5);
  EXPECT_LT(reuse.held_back.gmae_pct, 0.8 * plain.held_back.gmae_pct);
  EXPECT_LT(reuse.held_back.mape_pct, plain.held_back.mape_pct);
}

TEST(KernelEmbeddingMlp, AssetsPerDirectionRoundTripBitExactly) {
  const EmbeddingBenchmark benchmark = synthetic_benchmark(120, 60, 4);
  const std::vector<TrainingReport> reports =
      train_embedding_assets(benchmark, "test:/benchmarks/embedding", quick_plan(10));
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].asset.name, "embedding_forward-V100-SXM2");
  EXPECT_EQ(reports[1].asset.name, "embedding_backward-V100-SXM2");
  EXPECT_EQ(reports[0].held_back.samples, 24u);
  EXPECT_EQ(reports[1].held_back.samples, 12u);

  const std::string path = temp_path("perfsim_embedding_mlp_assets");
  for (const TrainingReport& report : reports)
    write_mlp_asset(path, report.asset);
  const std::vector<MlpKernelAsset> back = read_all_mlp_assets(path);
  std::filesystem::remove(path);
  ASSERT_EQ(back.size(), 2u);  // listed sorted: backward first
  const MlpKernelAsset& forward = back[1];
  EXPECT_EQ(forward.kernel_kind, "embedding_forward");
  EXPECT_EQ(forward.device, "V100-SXM2");
  EXPECT_EQ(forward.features.sizes.size(), 4u + kReuseFactorBins);
  EXPECT_FALSE(forward.features.sizes[4].log_scale);
  EXPECT_EQ(forward.features.dtypes, std::vector<DType>{DType::kFloat32});
  EXPECT_TRUE(same_bits(forward.gmae_pct, reports[0].asset.gmae_pct));
  for (const EmbeddingSample& sample : benchmark.samples) {
    const std::vector<double> sizes = embedding_mlp_sizes(
        sample.batch_size, sample.num_embeddings, sample.pooling, sample.dim, sample.reuse_factors);
    EXPECT_TRUE(same_bits(forward.predict_us(sizes, DType::kFloat32),
                          reports[0].asset.predict_us(sizes, DType::kFloat32)));
  }
}

TEST(KernelEmbeddingMlp, TooFewRowsOfADirectionIsAnInputError) {
  EXPECT_THROW(train_embedding_assets(synthetic_benchmark(40, 5, 4), "test", quick_plan(2)),
               InputError);
}

// The predictor takes the MLP for the device and dtype it was trained on, scales it by the
// number of tables, names it, says when it assumed uniform indices, and otherwise keeps the
// seed 000 heuristic.
TEST(KernelEmbeddingMlp, PredictorPicksTheMlpOnItsDeviceOnly) {
  const EmbeddingBenchmark benchmark = synthetic_benchmark(200, 0, 8);
  const std::vector<TrainingReport> reports =
      train_embedding_assets(benchmark, "test", quick_plan(20));
  ASSERT_EQ(reports.size(), 1u);
  const MlpKernelAsset& asset = reports[0].asset;
  const KernelPredictor v100(device("V100-SXM2"), {asset});

  EmbeddingWork work;
  work.batch_size = 1024;  // about 20 us per table: far above the 2 us floor
  work.rows = 100000;
  work.tables = 3;
  work.pooling_factor = 32;
  work.dim = 128;
  const KernelSpec assumed{"embedding_forward:aten::embedding_bag",
                           KernelCategory::kEmbeddingLookup, work};
  const KernelPrediction uniform = v100.predict(assumed);
  EXPECT_EQ(uniform.model, "mlp:embedding_forward-V100-SXM2+uniform-reuse");
  const ReuseFactors expected_reuse = uniform_reuse_factors(1024 * 32, 100000);
  const double per_table_us =
      asset.predict_us(embedding_mlp_sizes(1024, 100000, 32, 128, expected_reuse), DType::kFloat32);
  EXPECT_DOUBLE_EQ(uniform.duration_us, 3 * per_table_us);

  EmbeddingWork measured_reuse = work;
  measured_reuse.reuse_factors = benchmark.samples[0].reuse_factors;
  const KernelSpec known{"embedding_forward:aten::embedding_bag", KernelCategory::kEmbeddingLookup,
                         measured_reuse};
  EXPECT_EQ(v100.predict(known).model, "mlp:embedding_forward-V100-SXM2");

  EXPECT_EQ(KernelPredictor(device("A100-80GB"), {asset}).predict(assumed).model,
            "embedding-heuristic");
  EmbeddingWork half = work;
  half.dtype = DType::kFloat16;  // not in the benchmark
  EXPECT_EQ(v100.predict({"embedding_forward:x", KernelCategory::kEmbeddingLookup, half}).model,
            "embedding-heuristic");
  EmbeddingWork backward = work;
  backward.backward = true;  // no backward asset
  EXPECT_EQ(
      v100.predict({"embedding_backward:x", KernelCategory::kEmbeddingLookup, backward}).model,
      "embedding-heuristic");
}

// `perfsim train` on a file with both tables writes the GEMM asset and one embedding asset per
// direction; a file with neither table is an input error naming the file.
int run_train_command(std::vector<std::string> arguments) {
  CLI::App app;
  cli::CommandRegistry registry;
  cli::add_train_command(app, registry);
  arguments.insert(arguments.begin(), "train");
  std::reverse(arguments.begin(), arguments.end());  // CLI11 parses a reversed vector
  app.parse(arguments);
  return registry.entries().at(0).action(cli::CommandContext{});
}

TEST(KernelEmbeddingMlp, TrainCommandTrainsEveryTableInTheFile) {
  const std::string bench = temp_path("perfsim_train_command_bench");
  const std::string assets = temp_path("perfsim_train_command_assets");
  write_embedding_benchmark(bench, synthetic_benchmark(60, 40, 6));
  GemmBenchmark gemm{"V100-SXM2", "test", {}};
  for (std::int64_t size = 64; size <= 64 * 20; size += 64)
    gemm.samples.push_back({size, size, size, 1, DType::kFloat16, 1e-6 * double(size * size)});
  write_gemm_benchmark(bench, gemm);
  EXPECT_EQ(run_train_command({bench, "-o", assets, "--quick", "--epochs", "5"}), 0);
  EXPECT_EQ(list_mlp_assets(assets),
            (std::vector<std::string>{"embedding_backward-V100-SXM2", "embedding_forward-V100-SXM2",
                                      "gemm-V100-SXM2"}));
  EXPECT_EQ(read_mlp_asset(assets, "embedding_backward-V100-SXM2").training_source,
            bench + ":/benchmarks/embedding");
  std::filesystem::remove(assets);
  std::filesystem::remove(bench);

  const std::string empty = temp_path("perfsim_train_command_empty");
  h5::ColumnTable other;
  other.add("x", std::vector<double>{1.0});
  h5::write_table(empty, "/something_else", other);
  EXPECT_THROW(run_train_command({empty, "-o", assets}), InputError);
  std::filesystem::remove(empty);
}

}  // namespace
}  // namespace perfsim::kernels
