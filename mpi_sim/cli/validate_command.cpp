// perfsim validate collectives: GMAE and MAPE of predicted against measured collective times,
// per benchmark table and per curve region (seed 001 Table I). Without --topology each table is
// predicted by the curve of the same name; with it, by the full collective model (link classes,
// NCCL algorithm model) on ranks 0..n-1 of that topology. With --leave-one-out each table named
// by --hold-out (default: every multi-node table) is predicted from curves fitted to, and a
// fabric calibrated on, the other tables only (collectives/curve_transfer.hpp).
#include <array>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "assets/collective_curve_assets.hpp"
#include "benchmark_data/collective_benchmark_table.hpp"
#include "collectives/collective_model.hpp"
#include "collectives/curve_transfer.hpp"
#include "collectives/error_table.hpp"
#include "io/atomic_file.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "mpi_sim/cli/shipped_config_option.hpp"
#include "perfsim/error.hpp"
#include "topology/leaf_spine.hpp"
#include "topology/node_resize.hpp"

namespace perfsim::cli {
namespace {

struct ValidateOptions {
  std::string bench;
  std::string assets;
  std::string topology;
  int nodes = 0;
  int gpus_per_node = 0;
  std::vector<std::string> tables;
  double max_gmae_percent = 0.0;
  bool leave_one_out = false;
  std::vector<std::string> hold_out;
  std::string nccl_algo;
  std::string nccl_proto;
  int nccl_min_ctas = 0;  // NCCL_MIN_CTAS of the predicted run (0: the topology's)
  int nccl_max_ctas = 0;
  std::string format = "text";  // text, csv or json (schema perfsim-validate-collectives/1)
  std::string points_csv;       // per-size measured and predicted times, when named
};

constexpr const char* kValidateCollectivesSchema = "perfsim-validate-collectives/1";
constexpr std::array<const char*, 4> kRegionNames{"all", "latency", "sigmoid", "bandwidth"};

// The error summaries of one row in the order of kRegionNames.
std::array<const collectives::ErrorSummary*, 4> summaries_of(
    const collectives::ErrorTableRow& row) {
  return {&row.errors.all, &row.errors.by_region[0], &row.errors.by_region[1],
          &row.errors.by_region[2]};
}

// One line per table and region: relative errors as fractions (0.05 = 5 %).
std::string rows_csv(const std::vector<collectives::ErrorTableRow>& rows) {
  std::ostringstream out;
  out << "table,region,points,gmae,mape,stddev,max\n";
  out << std::setprecision(9);
  for (const auto& row : rows) {
    const auto summaries = summaries_of(row);
    for (std::size_t i = 0; i < summaries.size(); ++i)
      out << row.name << ',' << kRegionNames[i] << ',' << summaries[i]->count << ','
          << summaries[i]->gmae << ',' << summaries[i]->mape << ',' << summaries[i]->stddev << ','
          << summaries[i]->max << '\n';
  }
  return out.str();
}

std::string rows_json(const std::vector<collectives::ErrorTableRow>& rows, const std::string& mode,
                      const std::string& topology) {
  nlohmann::ordered_json doc;
  doc["schema"] = kValidateCollectivesSchema;
  doc["mode"] = mode;
  doc["topology"] = topology.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(topology);
  doc["tables"] = nlohmann::ordered_json::array();
  for (const auto& row : rows) {
    nlohmann::ordered_json table;
    table["name"] = row.name;
    const auto summaries = summaries_of(row);
    for (std::size_t i = 0; i < summaries.size(); ++i)
      table[kRegionNames[i]] = {{"points", summaries[i]->count},
                                {"gmae", summaries[i]->gmae},
                                {"mape", summaries[i]->mape},
                                {"stddev", summaries[i]->stddev},
                                {"max", summaries[i]->max}};
    doc["tables"].push_back(std::move(table));
  }
  return doc.dump(2) + "\n";
}

// Per-size rows behind the summaries, so a reader sees where a sweep and its prediction part.
// Checked writable before any prediction and written whole at the end (io/atomic_file.hpp), as
// every other output: an unwritable path is an I/O failure (exit 3), never half a file.
class PointsCsv {
 public:
  explicit PointsCsv(std::string path) : path_(std::move(path)) {
    if (path_.empty())
      return;
    io::check_writable(path_);
    rows_ << "table,bytes,placement,region,measured_us,predicted_us,relative_error\n"
          << std::setprecision(9);
  }
  void add(const std::string& table, const std::vector<collectives::PredictionPoint>& points) {
    if (path_.empty())
      return;
    for (const auto& point : points)
      rows_ << table << ',' << point.bytes << ',' << (point.in_place ? "in" : "out") << ','
            << static_cast<int>(point.region) << ',' << point.measured_us << ','
            << point.predicted_us << ','
            << (point.predicted_us - point.measured_us) / point.measured_us << '\n';
  }
  void write() const {
    if (!path_.empty())
      io::write_file_atomically(path_, rows_.str());
  }

 private:
  std::string path_;
  std::ostringstream rows_;
};

// Text keeps its headline; csv and json carry the table alone.
void print_rows(const ValidateOptions& options, const std::vector<collectives::ErrorTableRow>& rows,
                const std::string& mode, const std::string& headline) {
  if (options.format == "csv")
    std::cout << rows_csv(rows);
  else if (options.format == "json")
    std::cout << rows_json(rows, mode, options.topology);
  else
    std::cout << headline << collectives::format_error_table(rows);
}

// The predicted run's NCCL settings from the command line over the topology's: --nccl-algo /
// --nccl-proto replace its restrictions, --nccl-min-ctas / --nccl-max-ctas its CTA bounds.
std::optional<collectives::NcclSettings> command_line_settings(
    const ValidateOptions& options, const collectives::NcclSettings& topology_settings) {
  const bool restrictions = !options.nccl_algo.empty() || !options.nccl_proto.empty();
  if (!restrictions && options.nccl_min_ctas == 0 && options.nccl_max_ctas == 0)
    return std::nullopt;
  auto settings = restrictions ? collectives::parse_nccl_settings(
                                     options.nccl_algo, options.nccl_proto, "--nccl-algo/proto", "")
                               : topology_settings;
  if (restrictions) {  // new restrictions; the topology's CTA bounds stay unless given below
    settings.min_ctas = topology_settings.min_ctas;
    settings.max_ctas = topology_settings.max_ctas;
  }
  if (options.nccl_min_ctas > 0)
    settings.min_ctas = options.nccl_min_ctas;
  if (options.nccl_max_ctas > 0)
    settings.max_ctas = options.nccl_max_ctas;
  if (settings.min_ctas > 0 && settings.max_ctas > 0 && settings.min_ctas > settings.max_ctas)
    throw InputError("--nccl-min-ctas", "", "exceeds --nccl-max-ctas");
  return settings;
}

int report(const std::vector<collectives::ErrorTableRow>& rows, double max_gmae_percent) {
  if (max_gmae_percent > 0.0) {
    for (const auto& row : rows) {
      if (100.0 * row.errors.all.gmae > max_gmae_percent) {
        std::cerr << "perfsim: error: " << row.name << ": GMAE " << 100.0 * row.errors.all.gmae
                  << "% above --max-gmae " << max_gmae_percent << "%\n";
        return 4;  // README "Exit codes": ran, but a check did not pass
      }
    }
  }
  return 0;
}

int run_leave_one_out(const ValidateOptions& options) {
  if (options.topology.empty())
    throw InputError("--leave-one-out", "",
                     "needs --topology: the fabric (GPUs, NVSwitch, NICs) the sweeps ran on");
  const auto topology = topology::load_topology(options.topology);
  // The held and training sweeps ran on the cluster the topology describes (its "nccl" section:
  // settings, tuner plugin); --nccl-algo/--nccl-proto describe the held run only.
  const auto training_settings = collectives::topology_nccl_settings(topology);
  auto settings = command_line_settings(options, training_settings).value_or(training_settings);
  // As in CollectiveModel: the cluster's tuner plugin still chooses among what is left.
  settings.tuner_ring_from_bytes_per_rank = training_settings.tuner_ring_from_bytes_per_rank;
  std::vector<std::string> names = options.tables;
  if (names.empty())
    names = benchmark_data::list_collective_sweeps(options.bench);
  std::vector<collectives::CollectiveSweep> sweeps;
  for (const auto& name : names)
    sweeps.push_back(benchmark_data::read_collective_sweep(options.bench, name));
  // Held-out tables predicted from the --tables pool minus themselves; a held-out table that is
  // not in the pool is read on its own (train on some tables, predict others).
  std::vector<collectives::HeldOutResult> results;
  std::vector<std::string> held = options.hold_out;
  if (held.empty()) {
    for (const auto& sweep : sweeps) {
      if (sweep.n_nodes > 1)
        held.push_back(sweep.name);
    }
  }
  if (held.empty())
    throw InputError("--hold-out", "", "no table to hold out (none spans nodes; name some)");
  const auto nominal = collectives::nominal_fabric(topology);
  PointsCsv points_csv(options.points_csv);
  for (const auto& name : held) {
    std::vector<collectives::CollectiveSweep> training;
    for (const auto& sweep : sweeps) {
      if (sweep.name != name)
        training.push_back(sweep);
    }
    const auto target = benchmark_data::read_collective_sweep(options.bench, name);
    results.push_back(
        collectives::predict_held_out(nominal, settings, training, target, training_settings));
    points_csv.add(name, results.back().points);
  }
  points_csv.write();
  std::vector<collectives::ErrorTableRow> rows;
  std::ostringstream headline;
  headline << "leave one out on " << options.topology
           << ": each held-out table predicted from the others (fitted curves + calibrated "
              "fabric)\n";
  for (const auto& result : results) {
    std::string from;
    for (const auto& reference : result.references)
      from += (from.empty() ? "" : " + ") + reference;
    headline << "  " << result.name << ": " << collective_name(result.kind) << ", "
             << result.n_ranks << " GPUs on " << result.n_nodes << " node(s), from " << from
             << "\n";
    rows.push_back({result.name, collectives::summarize_by_region(result.points)});
  }
  print_rows(options, rows, "leave_one_out", headline.str());
  return report(rows, options.max_gmae_percent);
}

int run_validate(const ValidateOptions& options) {
  if (options.leave_one_out)
    return run_leave_one_out(options);
  if (options.assets.empty())
    throw InputError("--assets", "", "required unless --leave-one-out");
  const auto curves = assets::read_collective_curves(options.assets);
  std::optional<collectives::CollectiveModel> model;
  if (!options.topology.empty()) {
    auto topology = topology::load_topology(options.topology);
    topology = topology::resized(std::move(topology), options.nodes, options.gpus_per_node);
    const auto settings =
        command_line_settings(options, collectives::topology_nccl_settings(topology));
    model.emplace(std::move(topology), curves, std::vector<ProcessGroup>{}, settings);
  }
  std::vector<std::string> names = options.tables;
  if (names.empty())
    names = benchmark_data::list_collective_sweeps(options.bench);
  std::vector<collectives::ErrorTableRow> rows;
  PointsCsv points_csv(options.points_csv);
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
    points_csv.add(name, points);
    rows.push_back({name, collectives::summarize_by_region(points)});
  }
  points_csv.write();
  print_rows(options, rows, model ? "model" : "curves",
             (model ? "collective model on " + options.topology +
                          (topology::spine_can_bind(model->topology())
                               ? " (" + topology::leaf_spine_provenance(model->topology()) + ")"
                               : "")
                    : std::string("own curves")) +
                 ": relative error of predicted time\n");
  return report(rows, options.max_gmae_percent);
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
  collectives_command
      ->add_option(
          "--assets", options->assets,
          "model assets (perfsim fit); required unless --leave-one-out, which fits its own")
      ->check(CLI::ExistingFile);
  collectives_command
      ->add_option("--topology", options->topology,
                   "predict through this topology (a file or name in configs/topologies); "
                   "required by --leave-one-out; default: the curves alone")
      ->transform(shipped_config("topologies"))
      ->check(CLI::ExistingFile);
  collectives_command->add_option("--nodes", options->nodes, "override the topology's node count");
  collectives_command
      ->add_option("--gpus-per-node", options->gpus_per_node,
                   "GPUs per node: local GPUs 0 .. G-1 of the topology's node (default: all)")
      ->check(CLI::PositiveNumber);
  collectives_command->add_option("--tables", options->tables, "only these tables (default: all)");
  collectives_command->add_flag(
      "--leave-one-out", options->leave_one_out,
      "predict each held-out table from curves fitted to the other tables only (needs "
      "--topology for the fabric)");
  collectives_command->add_option(
      "--hold-out", options->hold_out,
      "tables to hold out with --leave-one-out, each predicted from the --tables minus itself "
      "(default: every multi-node table)");
  collectives_command->add_option(
      "--nccl-algo", options->nccl_algo,
      "NCCL_ALGO-like restriction: ring,tree,nvls,nvlstree or ^name (default: "
      "NCCL's own choice)");
  collectives_command->add_option("--nccl-proto", options->nccl_proto,
                                  "NCCL_PROTO-like restriction: LL,LL128,Simple or ^name (default: "
                                  "NCCL's own choice)");
  collectives_command
      ->add_option("--nccl-min-ctas", options->nccl_min_ctas,
                   "NCCL_MIN_CTAS of the predicted run: at least this many channels (default: "
                   "the topology's nccl/min_ctas, else NCCL's channel count)")
      ->check(CLI::PositiveNumber);
  collectives_command
      ->add_option("--nccl-max-ctas", options->nccl_max_ctas,
                   "NCCL_MAX_CTAS of the predicted run: at most this many channels (default: "
                   "the topology's nccl/max_ctas)")
      ->check(CLI::PositiveNumber);
  collectives_command
      ->add_option("--format", options->format,
                   "standard output: text (the table), csv (table,region,points,gmae,mape,stddev,"
                   "max; errors as fractions) or json (schema perfsim-validate-collectives/1, "
                   "docs/output-formats.md)")
      ->check(CLI::IsMember({"text", "csv", "json"}));
  collectives_command->add_option(
      "--points", options->points_csv,
      "also write every size's measured and predicted time to this CSV file "
      "(table,bytes,placement,region,measured_us,predicted_us,relative_error; default: none)");
  collectives_command->add_option("--max-gmae", options->max_gmae_percent,
                                  "exit 1 when a table's GMAE exceeds this many percent");
  registry.add(collectives_command, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_validate(*options); });
}

}  // namespace perfsim::cli
