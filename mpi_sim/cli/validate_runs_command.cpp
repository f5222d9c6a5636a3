// perfsim validate runs RUNS.csv: predicted against measured iteration times of real training
// runs, with error statistics, per-group rank correlation and the regret of perfsim's pick, and
// K-fold cross-validation of the end-to-end calibration (held-fold predictions only).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/atomic_file.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "mpi_sim/cli/terminal.hpp"
#include "mpi_sim/cli/validate_runs_explain.hpp"
#include "perfsim/error.hpp"
#include "scenario/llm_calibration.hpp"
#include "scenario/run_validation.hpp"
#include "validation/framework_presets.hpp"

namespace perfsim::cli {
namespace {

struct ValidateRunsOptions {
  std::string table;
  std::string framework;  // empty: megatron-core
  int folds = 0;
  // The calibration to apply without cross-validation: "" = the shipped one of each row's
  // device (validation::shipped_calibration_for), a file, or "none".
  std::string calibration;
  std::string fit_output;  // fit on every row and write here
  std::string assets;
  std::string format = "text";
  int jobs = 1;
  std::vector<std::string> explain;  // row names
  bool fit_backward_host_cost = false;
  bool quiet = false;
};

std::string percent(double fraction) {
  if (!std::isfinite(fraction))
    return "-";
  std::ostringstream out;
  out << std::showpos << std::fixed << std::setprecision(1) << 100.0 * fraction << "%";
  return out.str();
}

std::string fixed(double value, int digits) {
  if (!std::isfinite(value))
    return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

// Every row ran on its GPUs: a layout the memory closed form does not fit on its device is a
// miss of that model (or of the device file's capacity), named here with its worst stage.
void print_memory_check(const scenario::RunValidationReport& report, std::ostream& out) {
  std::size_t checked = 0;
  std::string misses;
  std::size_t missed = 0;
  for (const scenario::RunPrediction& p : report.predictions) {
    if (!p.skipped.empty() || !p.memory.known)
      continue;
    ++checked;
    if (p.memory.fits)
      continue;
    ++missed;
    misses += "\n  " + p.row->name + ": " + memory::format_bytes(p.memory_peak_bytes) +
              ", short by " + memory::format_bytes(-p.memory.margin_bytes);
  }
  if (checked == 0)
    return;
  out << "memory (closed form, worst stage, against each row's device): ";
  if (missed == 0)
    out << "every one of " << checked << " layouts fits\n";
  else
    out << missed << " of " << checked << " layouts that ran do not fit:" << misses << "\n";
}

// Whose switches fill the rows' empty switch cells: a table of published runs seldom states
// them, and Megatron-LM's current defaults (megatron-core) are not what most recipes ran.
void print_frameworks(const scenario::RunValidationReport& report, std::ostream& out) {
  std::map<std::string, std::size_t> rows;
  for (const scenario::RunPrediction& prediction : report.predictions)
    ++rows[std::string(validation::framework_preset(prediction.row->framework).name)];
  std::string text;
  for (const auto& [framework, count] : rows)
    text += (text.empty() ? "" : ", ") + framework + " (" + std::to_string(count) + " rows)";
  out << "framework: " << text
      << "; it fills each row's empty switch cells (README \"Frameworks\"; the framework "
         "column or --framework)\n";
}

void print_text(const scenario::RunValidationReport& report, std::ostream& out) {
  out << "validate runs: " << report.source << "\n";
  if (report.cross_validated) {
    out << "calibration: " << report.fold_calibrations.size()
        << "-fold cross-validation; every prediction below is OUT OF SAMPLE (its row's fold was "
           "held out of the fit)\n";
    for (std::size_t fold = 0; fold < report.fold_calibrations.size(); ++fold)
      out << "  fold " << fold + 1 << ": "
          << scenario::describe_calibration(report.fold_calibrations[fold]) << "\n";
  } else if (report.calibrations_by_device.size() > 1) {
    out << "calibration: the shipped one of each row's platform (by its device):\n";
    for (const auto& [calibration, devices] : report.calibrations_by_device) {
      std::string names;
      for (const std::string& device : devices)
        names += (names.empty() ? "" : ", ") + device;
      out << "  " << names << ": " << scenario::describe_calibration(calibration) << "\n";
    }
  } else {
    out << "calibration: " << scenario::describe_calibration(report.calibration) << "\n";
  }
  print_frameworks(report, out);
  out << "\n"
      << std::left << std::setw(34) << "run" << std::setw(30) << "group" << std::right
      << std::setw(11) << "measured_s" << std::setw(12) << "predicted_s" << std::setw(9) << "error"
      << "  layout\n";
  std::size_t skipped = 0;
  for (const scenario::RunPrediction& prediction : report.predictions) {
    out << std::left << std::setw(34) << prediction.row->name << std::setw(30)
        << prediction.row->group << std::right;
    if (!prediction.skipped.empty()) {
      ++skipped;
      out << "  skipped: " << prediction.skipped << "\n";
      continue;
    }
    out << std::setw(11) << fixed(prediction.measured_s, 4) << std::setw(12)
        << fixed(prediction.predicted_s, 4) << std::setw(9) << percent(prediction.signed_error)
        << "  " << prediction.layout << "\n";
  }
  const validation::ErrorSummary& errors = report.errors;
  out << "\nruns simulated: " << errors.count << " of " << report.predictions.size();
  if (skipped > 0)
    out << " (" << skipped << " skipped, reasons above)";
  if (errors.count == 0)  // no error to summarize: say so rather than print zeros
    out << "\nabsolute error: none (no row was simulated)\n";
  else
    out << "\nabsolute error: mean " << fixed(100 * errors.mean_abs, 2) << "%, median "
        << fixed(100 * errors.median_abs, 2) << "%, max " << fixed(100 * errors.max_abs, 2)
        << "%; mean signed " << percent(errors.mean_signed)
        << (report.cross_validated ? " (out of sample)" : "") << "\n";
  print_memory_check(report, out);
  if (!report.groups.empty()) {
    out << "\n"
        << std::left << std::setw(34) << "group" << std::right << std::setw(6) << "runs"
        << std::setw(10) << "spearman" << std::setw(10) << "regret"
        << "\n";
    for (const scenario::GroupStatistics& group : report.groups)
      out << std::left << std::setw(34) << group.group << std::right << std::setw(6) << group.runs
          << std::setw(10) << fixed(group.spearman, 3) << std::setw(10) << percent(group.regret)
          << "\n";
  }
}

void print_csv(const scenario::RunValidationReport& report, std::ostream& out) {
  out << "name,group,layout,measured_s,predicted_s,simulated_s,signed_error,fold,skipped,"
         "memory_peak_bytes,memory_fits\n";
  auto quoted = [](const std::string& text) {
    std::string escaped = "\"";
    for (char c : text)
      escaped += c == '"' ? std::string("\"\"") : std::string(1, c);
    return escaped + "\"";
  };
  for (const scenario::RunPrediction& p : report.predictions) {
    out << quoted(p.row->name) << ',' << quoted(p.row->group) << ',' << quoted(p.layout) << ',';
    if (p.skipped.empty())
      out << std::setprecision(9) << p.measured_s << ',' << p.predicted_s << ',' << p.simulated_s
          << ',' << p.signed_error << ',' << p.fold << ",," << p.memory_peak_bytes << ','
          << (p.memory.known ? (p.memory.fits ? "1" : "0") : "") << "\n";
    else
      out << ",,,,," << quoted(p.skipped) << ",,\n";
  }
}

nlohmann::ordered_json report_json(const scenario::RunValidationReport& report) {
  nlohmann::ordered_json doc;
  doc["schema"] = "perfsim-validate-runs/1";
  doc["source"] = report.source;
  doc["cross_validated"] = report.cross_validated;
  if (report.cross_validated) {
    doc["fold_calibrations"] = nlohmann::ordered_json::array();
    for (const auto& c : report.fold_calibrations)
      doc["fold_calibrations"].push_back(validation::calibration_terms_json(c));
  } else if (report.calibrations_by_device.size() > 1) {
    doc["calibrations"] = nlohmann::ordered_json::array();
    for (const auto& [calibration, devices] : report.calibrations_by_device) {
      nlohmann::ordered_json entry = validation::calibration_terms_json(calibration);
      entry["applied_to_devices"] = devices;
      doc["calibrations"].push_back(entry);
    }
  } else {
    doc["calibration"] = validation::calibration_terms_json(report.calibration);
  }
  doc["runs"] = nlohmann::ordered_json::array();
  auto number_or_null = [](double value) {
    return std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json();
  };
  for (const scenario::RunPrediction& p : report.predictions) {
    nlohmann::ordered_json run{{"name", p.row->name}, {"group", p.row->group}};
    if (p.skipped.empty()) {
      run["layout"] = p.layout;
      run["measured_s"] = p.measured_s;
      run["predicted_s"] = p.predicted_s;
      run["simulated_s"] = p.simulated_s;
      run["signed_error"] = p.signed_error;
      if (p.fold >= 0)
        run["fold"] = p.fold;
      run["memory_peak_bytes"] = p.memory_peak_bytes;
      if (p.memory.known) {
        run["memory_fits"] = p.memory.fits;
        run["memory_margin_bytes"] = p.memory.margin_bytes;
      }
    } else {
      run["skipped"] = p.skipped;
    }
    doc["runs"].push_back(run);
  }
  doc["errors"] = {{"count", report.errors.count},
                   {"mean_abs", report.errors.mean_abs},
                   {"median_abs", report.errors.median_abs},
                   {"max_abs", report.errors.max_abs},
                   {"mean_signed", report.errors.mean_signed}};
  doc["groups"] = nlohmann::ordered_json::array();
  for (const scenario::GroupStatistics& g : report.groups)
    doc["groups"].push_back({{"group", g.group},
                             {"runs", g.runs},
                             {"spearman", number_or_null(g.spearman)},
                             {"regret", number_or_null(g.regret)}});
  if (!report.explanations.empty())
    doc["explanations"] = explanations_json(report);
  return doc;
}

void print_json(const scenario::RunValidationReport& report, std::ostream& out) {
  out << report_json(report).dump(2) << "\n";
}

int run_validate_runs(const ValidateRunsOptions& options) {
  validation::RunTable table = validation::load_run_table(options.table);
  // --framework (checked by its option: a known name) fills the framework cell of the rows that
  // leave it empty.
  for (validation::RunRow& row : table.rows)
    if (row.framework.empty())
      row.framework = options.framework;
  scenario::RunValidationRequest request;
  request.assets_path = options.assets;
  request.folds = options.folds;
  request.jobs = options.jobs;
  request.fit_backward_host_cost = options.fit_backward_host_cost;
  request.explain = options.explain;
  if (!options.explain.empty() && !options.fit_output.empty())
    throw InputError("--explain", "", "cannot be combined with --fit-calibration");
  if (!options.explain.empty() && options.format == "csv")
    throw InputError("--explain", "", "needs --format text or json (csv has one row per run)");
  if (options.folds <= 1 && options.fit_output.empty()) {
    if (options.calibration.empty()) {
      request.shipped_calibration_by_device = true;
    } else if (options.calibration != "none") {
      request.calibration = validation::load_calibration(options.calibration);
      request.calibration_argument = options.calibration;
    }
  }
  if (!options.quiet && stderr_reaches_terminal()) {
    request.progress = [](const char* stage, std::size_t done, std::size_t total) {
      std::fprintf(stderr, "\r  %s: %zu/%zu", stage, done, total);
      if (done == total)
        std::fprintf(stderr, "\n");
    };
  }
  if (!options.fit_output.empty()) {
    if (options.folds > 1)
      throw InputError("--fit-calibration", "", "cannot be combined with --cv");
    const validation::EndToEndCalibration calibration =
        scenario::fit_calibration_on(table, request);
    io::write_file_atomically(options.fit_output, validation::calibration_json(calibration));
    std::cout << "calibration fitted on " << calibration.fitted_rows << " runs (IN SAMPLE: mean "
              << "absolute error " << fixed(100 * calibration.fit_mean_abs_error, 2)
              << "%): " << scenario::describe_calibration(calibration) << "\nwritten to "
              << options.fit_output << "\n";
    return 0;
  }
  const scenario::RunValidationReport report = scenario::validate_runs(table, request);
  if (options.format == "csv")
    print_csv(report, std::cout);
  else if (options.format == "json")
    print_json(report, std::cout);
  else {
    print_text(report, std::cout);
    print_explanations(report, std::cout);
  }
  return 0;
}

}  // namespace

void add_validate_runs_command(CLI::App& app, CommandRegistry& registry) {
  auto found = app.get_subcommands([](CLI::App* sub) { return sub->get_name() == "validate"; });
  CLI::App* validate =
      found.empty() ? app.add_subcommand("validate", "Compare with measurements") : found.front();
  CLI::App* runs = validate->add_subcommand(
      "runs",
      "Predict every measured training run of a RUNS.csv table (README: \"Validating against "
      "measured runs\") and report the error, per-group Spearman rank correlation and the "
      "regret of perfsim's pick");
  auto options = std::make_shared<ValidateRunsOptions>();
  runs->add_option("table", options->table, "RUNS.csv (columns in README)")
      ->required()
      ->check(CLI::ExistingFile);
  runs->add_option("--cv", options->folds,
                   "K-fold cross-validation of the end-to-end calibration: fit on K-1 folds, "
                   "predict the held one; only held-fold (out-of-sample) errors are reported")
      ->check(CLI::Range(2, 100));
  runs->add_option(
      "--calibration", options->calibration,
      "host-cost calibration to apply (perfsim-llm-calibration/1 JSON), or \"none\" "
      "for the kernel, collective and engine models alone; default: the shipped one of each "
      "row's platform, by its device: configs/assets/llm_calibration-h100.json (fitted "
      "on the H100 development table) for H100-SXM and H200, "
      "configs/assets/llm_calibration.json (fitted on the vTrain calibration half) for "
      "every other device; in-sample on the table each was fitted on. Ignored with "
      "--cv, which fits its own per fold");
  runs->add_option("--fit-calibration", options->fit_output,
                   "fit the calibration on every row of the table, write it to this JSON file "
                   "(the fit error printed is in-sample; default: no fit)");
  runs->add_option("--assets", options->assets,
                   "fitted collective curves (perfsim fit); default: the shipped ones where they "
                   "cover the topology, else nominal curves from its link bandwidths");
  runs->add_option("--format", options->format, "text (default), csv or json")
      ->check(CLI::IsMember({"text", "csv", "json"}));
  runs->add_option("--jobs", options->jobs, "simulation threads (default 1)")
      ->check(CLI::Range(1, 256));
  runs->add_flag("--fit-backward-host-cost", options->fit_backward_host_cost,
                 "with --cv or --fit-calibration: fit the host cost per op of the backward pass "
                 "(issued by the autograd engine) apart from the cost per op issued from Python "
                 "(forward, recompute, loss, optimizer), as a ratio of 1, 0.75, 0.5 or 0.25 (one "
                 "fit per ratio: about four times the run time); default: one cost for every op");
  runs->add_option(
          "--explain", options->explain,
          "for this row (its name; repeat or comma-separate for more): the `perfsim "
          "simulate` command that predicts the same iteration time, and simulate's "
          "\"where the time goes\" summary of it; text or json, not with --cv (default: none)")
      ->delimiter(',');
  std::string frameworks;
  for (std::string_view name : validation::framework_names())
    frameworks += (frameworks.empty() ? "" : ", ") + std::string(name);
  runs->add_option("--framework", options->framework,
                   "the training framework of rows whose framework cell is empty: its recipes' "
                   "switches fill their empty switch cells (" +
                       frameworks +
                       "; README \"Frameworks\"); default: megatron-core, "
                       "Megatron-LM's current defaults")
      ->check(CLI::IsMember(validation::framework_names()));
  runs->add_flag("--quiet", options->quiet, "no progress on stderr");
  registry.add(runs, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_validate_runs(*options); });
}

}  // namespace perfsim::cli
