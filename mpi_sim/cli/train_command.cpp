// `perfsim train BENCH.h5 -o assets.h5`: fits the MLP kernel models to the benchmark tables
// the file holds and writes one asset each, printing GMAE and MAPE on a held-back 20%:
//   /benchmarks/gemm       the GEMM MLP of seed 000 Sec. 4.3.2.2 with the modulo one-hot
//                          features of seed 003 Table 3;
//   /benchmarks/embedding  the embedding-lookup MLPs of seed 001 Sec. IV-C (log B, E, L, D and
//                          17 reuse-factor bins), one per direction in the table.
#include <iostream>

#include "hdf5/column_table.hpp"
#include "kernels/embedding_mlp_trainer.hpp"
#include "kernels/gemm_benchmark_table.hpp"
#include "kernels/mlp_trainer.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "perfsim/error.hpp"

namespace perfsim::cli {
namespace {

struct TrainOptions {
  std::string benchmark;
  std::string output;
  std::int64_t modulo = 8;
  int epochs = 200;
  bool quick = false;
};

void print_report(const kernels::TrainingReport& report, const std::string& output) {
  std::cout << "chosen: " << report.chosen.hidden_layers << " hidden layers x "
            << report.chosen.neurons_per_layer << " neurons, Adam lr "
            << report.chosen.learning_rate << ", " << report.chosen.epochs
            << " epochs (validation GMAE " << report.chosen_validation_gmae_pct << "%)\n";
  std::cout << "held-back " << report.held_back.samples << " samples: GMAE "
            << report.held_back.gmae_pct << "%, MAPE " << report.held_back.mape_pct << "%\n";
  kernels::write_mlp_asset(output, report.asset);
  std::cout << "wrote mlp:" << report.asset.name << " to " << output << "\n";
}

void train_gemm(const TrainOptions& options, const kernels::TrainingPlan& plan) {
  const kernels::GemmBenchmark benchmark = kernels::read_gemm_benchmark(options.benchmark);
  std::cout << "training GEMM MLP for " << benchmark.device << " on " << benchmark.samples.size()
            << " samples (" << options.benchmark << ":" << kernels::kGemmBenchmarkGroup
            << ", source " << benchmark.source << "), " << plan.candidates.size()
            << " grid points, modulo " << options.modulo << "\n";
  print_report(
      kernels::train_gemm_asset(benchmark, options.benchmark + ":" + kernels::kGemmBenchmarkGroup,
                                options.modulo, plan),
      options.output);
}

void train_embedding(const TrainOptions& options, const kernels::TrainingPlan& plan) {
  const kernels::EmbeddingBenchmark benchmark =
      kernels::read_embedding_benchmark(options.benchmark);
  std::cout << "training embedding-lookup MLPs for " << benchmark.device << " on "
            << benchmark.samples.size() << " samples (" << options.benchmark << ":"
            << kernels::kEmbeddingBenchmarkGroup << ", source " << benchmark.source << "), "
            << plan.candidates.size() << " grid points, features log2 B, E, L, D + 17 "
            << "reuse-factor bins\n";
  const std::string source = options.benchmark + ":" + kernels::kEmbeddingBenchmarkGroup;
  for (const kernels::TrainingReport& report :
       kernels::train_embedding_assets(benchmark, source, plan)) {
    std::cout << report.asset.kernel_kind << ": " << report.training_samples
              << " training samples\n";
    print_report(report, options.output);
  }
}

int run_train(const TrainOptions& options) {
  const bool has_gemm = h5::group_exists(options.benchmark, kernels::kGemmBenchmarkGroup);
  const bool has_embedding = kernels::has_embedding_benchmark(options.benchmark);
  if (!has_gemm && !has_embedding)
    throw InputError(options.benchmark, "/benchmarks",
                     std::string("no ") + kernels::kGemmBenchmarkGroup + " or " +
                         kernels::kEmbeddingBenchmarkGroup + " table to train on");
  kernels::TrainingPlan plan;
  plan.candidates = kernels::default_training_grid(options.epochs);
  if (options.quick)
    plan.candidates.resize(1);
  if (has_gemm)
    train_gemm(options, plan);
  if (has_embedding)
    train_embedding(options, plan);
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, CommandRegistry& registry) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* sub = app.add_subcommand(
      "train", "Train MLP kernel models from benchmark HDF5 and write model assets");
  sub->add_option("benchmark", options->benchmark,
                  "Benchmark HDF5 with /benchmarks/gemm and/or /benchmarks/embedding")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("-o,--output", options->output, "Model-assets HDF5 to write (added to)")
      ->required();
  sub->add_option("--modulo", options->modulo,
                  "Divisor of the one-hot remainder features (seed 003 Table 3); 0 disables")
      ->check(CLI::Range(0, 1024));
  sub->add_option("--epochs", options->epochs, "Epochs per grid point")
      ->check(CLI::Range(1, 100000));
  sub->add_flag("--quick", options->quick, "Train one grid point instead of the whole grid");
  registry.add(sub, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_train(*options); });
}

}  // namespace perfsim::cli
