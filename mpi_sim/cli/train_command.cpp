// `perfsim train BENCH.h5 -o assets.h5`: fits the GEMM MLP of seed 000 Sec. 4.3.2.2 (with the
// modulo one-hot features of seed 003 Table 3) to the /benchmarks/gemm table of a benchmark
// file, prints GMAE and MAPE on a held-back 20%, and writes the asset.
#include <iostream>

#include "kernels/gemm_benchmark_table.hpp"
#include "kernels/mlp_trainer.hpp"
#include "mpi_sim/cli/command_line.hpp"

namespace perfsim::cli {
namespace {

struct TrainOptions {
  std::string benchmark;
  std::string output;
  std::int64_t modulo = 8;
  int epochs = 200;
  bool quick = false;
};

int run_train(const TrainOptions& options) {
  const kernels::GemmBenchmark benchmark = kernels::read_gemm_benchmark(options.benchmark);
  kernels::TrainingPlan plan;
  plan.candidates = kernels::default_training_grid(options.epochs);
  if (options.quick)
    plan.candidates.resize(1);
  std::cout << "training GEMM MLP for " << benchmark.device << " on " << benchmark.samples.size()
            << " samples (" << options.benchmark << ":" << kernels::kGemmBenchmarkGroup
            << ", source " << benchmark.source << "), " << plan.candidates.size()
            << " grid points, modulo " << options.modulo << "\n";
  const kernels::TrainingReport report = kernels::train_gemm_asset(
      benchmark, options.benchmark + ":" + kernels::kGemmBenchmarkGroup, options.modulo, plan);
  std::cout << "chosen: " << report.chosen.hidden_layers << " hidden layers x "
            << report.chosen.neurons_per_layer << " neurons, Adam lr "
            << report.chosen.learning_rate << ", " << report.chosen.epochs
            << " epochs (validation GMAE " << report.chosen_validation_gmae_pct << "%)\n";
  std::cout << "held-back " << report.held_back.samples << " samples: GMAE "
            << report.held_back.gmae_pct << "%, MAPE " << report.held_back.mape_pct << "%\n";
  kernels::write_mlp_asset(options.output, report.asset);
  std::cout << "wrote mlp:" << report.asset.name << " to " << options.output << "\n";
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, CommandRegistry& registry) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* sub = app.add_subcommand(
      "train", "Train MLP kernel models from benchmark HDF5 and write model assets");
  sub->add_option("benchmark", options->benchmark, "Benchmark HDF5 with /benchmarks/gemm")
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
