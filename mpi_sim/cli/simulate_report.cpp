#include "mpi_sim/cli/simulate_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "report/detail_tables.hpp"
#include "report/html_report.hpp"
#include "report/run_breakdown.hpp"
#include "report/run_report_json.hpp"
#include "report/summary_screen.hpp"

namespace perfsim::cli {
namespace {

// Predicted against measured step ends (relative to the earliest measured step start).
std::string format_validation(const scenario::SimulationInputs& inputs,
                              std::span<const RankResult> results) {
  std::string out =
      "validation against the measured ProfilerStep (us from the earliest rank's step start):\n";
  char line[256];
  std::snprintf(line, sizeof(line), "%6s %14s %14s %14s %10s\n", "rank", "measured_start",
                "measured_end", "predicted_end", "error");
  out += line;
  double sum_abs_error = 0;
  TimestampUs measured_last = 0, predicted_last = 0;
  int compared = 0;
  for (const auto& step : inputs.measured_steps) {
    auto result = std::find_if(results.begin(), results.end(),
                               [&](const RankResult& r) { return r.sim_rank == step.rank; });
    if (result == results.end())
      continue;
    const double error = (result->iteration_us - step.end_us) / step.end_us;
    sum_abs_error += std::abs(error);
    ++compared;
    measured_last = std::max(measured_last, step.end_us);
    predicted_last = std::max(predicted_last, result->iteration_us);
    std::snprintf(line, sizeof(line), "%6d %14.1f %14.1f %14.1f %+9.2f%%\n", step.rank,
                  step.start_us, step.end_us, result->iteration_us, 100 * error);
    out += line;
  }
  if (compared > 0) {
    std::snprintf(line, sizeof(line),
                  "synchronized iteration (last step end): measured %.1f us, predicted %.1f us, "
                  "error %+.2f%%; mean absolute per-rank error %.2f%%\n",
                  measured_last, predicted_last,
                  100 * (predicted_last - measured_last) / measured_last,
                  100 * sum_abs_error / compared);
    out += line;
  }
  return out;
}

// The same comparison for machines: per rank, measured and predicted step ends.
nlohmann::ordered_json validation_json(const scenario::SimulationInputs& inputs,
                                       std::span<const RankResult> results) {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const auto& step : inputs.measured_steps) {
    auto result = std::find_if(results.begin(), results.end(),
                               [&](const RankResult& r) { return r.sim_rank == step.rank; });
    if (result == results.end())
      continue;
    ranks.push_back({{"rank", step.rank},
                     {"measured_start_us", step.start_us},
                     {"measured_end_us", step.end_us},
                     {"predicted_end_us", result->iteration_us},
                     {"error", (result->iteration_us - step.end_us) / step.end_us}});
  }
  return {{"reference", "measured ProfilerStep, us from the earliest rank's step start"},
          {"ranks", ranks}};
}

bool wants(const scenario::SimulateOptions& options, const std::string& name) {
  return std::find(options.details.begin(), options.details.end(), name) != options.details.end() ||
         std::find(options.details.begin(), options.details.end(), "all") != options.details.end();
}

std::string details(const scenario::SimulateOptions& options,
                    const scenario::SimulationInputs& inputs, std::span<const RankResult> results) {
  std::string out;
  auto section = [&](const std::string& text) { out += "\n" + text; };
  if (wants(options, "ranks"))
    section(report::format_rank_table(results));
  if (wants(options, "groups"))
    section(report::format_group_table(results, inputs.group_kind));
  if (wants(options, "streams"))
    section(report::format_stream_table(results, inputs.stream_label));
  for (const char* name : {"memory", "workload"}) {
    if (!wants(options, name))
      continue;
    const auto found = inputs.detail_sections.find(name);
    if (found != inputs.detail_sections.end())
      section(found->second(results));
    else if (std::find(options.details.begin(), options.details.end(), name) !=
             options.details.end())
      section("(no " + std::string(name) + " detail for this workload)\n");
  }
  return out;
}

}  // namespace

report::RunReport build_simulate_report(const scenario::SimulateOptions& options,
                                        const scenario::SimulationInputs& inputs,
                                        std::span<const RankResult> results, double wall_s) {
  report::RunReport report = report::build_run_report(results, inputs.group_kind);
  report.warnings = inputs.warnings;
  for (const std::string& note : inputs.notes) {
    // Trace inputs name themselves in their first note; generated workloads say more below.
    if (report.workload.empty() && note.rfind("workload: ", 0) == 0)
      report.workload = note.substr(std::string("workload: ").size());
    else
      report.provenance.push_back(note);
  }
  if (inputs.complete_report) {
    const std::string generic_workload = report.workload;
    inputs.complete_report(results, report);
    if (report.workload != generic_workload && !generic_workload.empty())
      report.provenance.insert(report.provenance.begin(), "workload: " + generic_workload);
  }
  if (!inputs.measured_steps.empty())
    report.extra_sections.push_back(format_validation(inputs, results));
  report.available_details = {"ranks", "groups", "streams"};
  for (const auto& [name, render] : inputs.detail_sections)
    report.available_details.push_back(name);
  report.wall_s = wall_s;
  report.results_path = options.results_path;
  report.run_name = options.run_name;
  report.timeline_path = options.timeline_path;
  return report;
}

void write_simulate_html(const scenario::SimulateOptions& options,
                         const scenario::SimulationInputs& inputs,
                         std::span<const RankResult> results, double wall_s) {
  const report::RunReport report = build_simulate_report(options, inputs, results, wall_s);
  report::write_html_report(options.report_path,
                            report::render_run_html(report, results, inputs.group_kind));
  if (!options.quiet)
    std::cerr << "perfsim: HTML report written to " << options.report_path << "\n";
}

void print_simulate_report(const scenario::SimulateOptions& options,
                           const scenario::SimulationInputs& inputs,
                           std::span<const RankResult> results, double wall_s, std::ostream& out) {
  const report::RunReport report = build_simulate_report(options, inputs, results, wall_s);
  if (options.format == "json") {
    nlohmann::ordered_json doc = report::run_report_json(report, results, inputs.group_kind);
    if (!inputs.measured_steps.empty())
      doc["validation"] = validation_json(inputs, results);
    out << doc.dump(2) << "\n";
    return;
  }
  if (options.format == "csv") {
    out << report::run_report_csv(report);
    return;
  }
  out << report::format_summary_screen(report);
  for (const std::string& section : report.extra_sections)
    out << "\n" << section;
  out << details(options, inputs, results);
  out << "\n" << report::format_run_footer(report);
}

}  // namespace perfsim::cli
