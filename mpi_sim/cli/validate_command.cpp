// perfsim validate collectives: GMAE and MAPE of predicted against measured collective times,
// per benchmark table and per curve region (seed 001 Table I). Without --topology each table is
// predicted by the curve of the same name; with it, by the full collective model (link classes,
// hierarchical multi-node composition) on ranks 0..n-1 of that topology.
#include <iostream>

#include "assets/collective_curve_assets.hpp"
#include "benchmark_data/collective_benchmark_table.hpp"
#include "collectives/collective_model.hpp"
#include "collectives/error_table.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "perfsim/error.hpp"

namespace perfsim::cli {
namespace {

struct ValidateOptions {
  std::string bench;
  std::string assets;
  std::string topology;
  int nodes = 0;
  std::vector<std::string> tables;
  double max_gmae_percent = 0.0;
};

int run_validate(const ValidateOptions& options) {
  const auto curves = assets::read_collective_curves(options.assets);
  std::optional<collectives::CollectiveModel> model;
  if (!options.topology.empty()) {
    auto topology = topology::load_topology(options.topology);
    if (options.nodes > 0)
      topology = topology::with_node_count(std::move(topology), options.nodes);
    model.emplace(std::move(topology), curves);
  }
  std::vector<std::string> names = options.tables;
  if (names.empty())
    names = benchmark_data::list_collective_sweeps(options.bench);
  std::vector<collectives::ErrorTableRow> rows;
  for (const auto& name : names) {
    const auto sweep = benchmark_data::read_collective_sweep(options.bench, name);
    std::vector<collectives::PredictionPoint> points;
    if (model) {
      points = collectives::predict_sweep(*model, sweep);
    } else {
      auto it = curves.find(name);
      if (it == curves.end())
        throw InputError(
            options.assets, assets::kCollectiveCurvesTable,
            "no curve named '" + name + "' (use --topology to predict with the model)");
      points = collectives::predict_with_curve(it->second, sweep);
    }
    rows.push_back({name, collectives::summarize_by_region(points)});
  }
  std::cout << (model ? "collective model on " + options.topology : std::string("own curves"))
            << ": relative error of predicted time\n"
            << collectives::format_error_table(rows);
  if (options.max_gmae_percent > 0.0) {
    for (const auto& row : rows) {
      if (100.0 * row.errors.all.gmae > options.max_gmae_percent) {
        std::cerr << "perfsim: error: " << row.name << ": GMAE " << 100.0 * row.errors.all.gmae
                  << "% above --max-gmae " << options.max_gmae_percent << "%\n";
        return 1;
      }
    }
  }
  return 0;
}

CLI::App* find_or_add(CLI::App& app, const std::string& name, const std::string& description) {
  // Other model families add their own "validate <family>" in their own files.
  const auto existing = app.get_subcommands([&](CLI::App* sub) { return sub->get_name() == name; });
  return existing.empty() ? app.add_subcommand(name, description) : existing.front();
}

}  // namespace

void add_validate_command(CLI::App& app, CommandRegistry& registry) {
  CLI::App* validate = find_or_add(app, "validate", "Compare model predictions with measurements");
  validate->require_subcommand(1);
  CLI::App* collectives_command = validate->add_subcommand(
      "collectives",
      "Collective curves / model against benchmark HDF5: GMAE and MAPE per table "
      "and per size region");
  auto options = std::make_shared<ValidateOptions>();
  collectives_command->add_option("--bench", options->bench, "benchmark HDF5 (perfsim import)")
      ->required()
      ->check(CLI::ExistingFile);
  collectives_command->add_option("--assets", options->assets, "model assets (perfsim fit)")
      ->required()
      ->check(CLI::ExistingFile);
  collectives_command
      ->add_option("--topology", options->topology,
                   "predict through this topology (configs/topologies/*.json)")
      ->check(CLI::ExistingFile);
  collectives_command->add_option("--nodes", options->nodes, "override the topology's node count");
  collectives_command->add_option("--tables", options->tables, "only these tables (default: all)");
  collectives_command->add_option("--max-gmae", options->max_gmae_percent,
                                  "exit 1 when a table's GMAE exceeds this many percent");
  registry.add(collectives_command, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_validate(*options); });
}

}  // namespace perfsim::cli
