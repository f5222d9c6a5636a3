#include "mpi_sim/cli/validate_runs_explain.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "mpi_sim/cli/simulate_arguments.hpp"
#include "mpi_sim/cli/simulate_report.hpp"
#include "report/run_report_json.hpp"
#include "report/summary_screen.hpp"

namespace perfsim::cli {
namespace {

std::string seconds(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.4f s", value);
  return text;
}

// simulate's report of the row's simulation: the pipeline-stage representatives validate runs
// simulates (simulate --fold auto simulates the same ranks and gives every other rank its
// stage's result).
report::RunReport row_report(const scenario::RunExplanation& explanation) {
  scenario::SimulateOptions options;
  options.results_path = "";
  return build_simulate_report(options, *explanation.inputs, explanation.results, 0.0);
}

// What the command leaves out of the prediction; "" when it gives the prediction exactly.
std::string difference(const scenario::RunExplanation& explanation) {
  if (explanation.iteration_term_us == 0)
    return "";
  char text[256];
  std::snprintf(text, sizeof text,
                "simulate does not add the calibration's fixed per-iteration term (%.3f ms): "
                "predicted_s = simulate's iteration time + %.3f ms",
                explanation.iteration_term_us / 1000, explanation.iteration_term_us / 1000);
  return text;
}

}  // namespace

void print_explanations(const scenario::RunValidationReport& report, std::ostream& out) {
  for (const scenario::RunExplanation& explanation : report.explanations) {
    const scenario::RunPrediction& prediction = report.predictions[explanation.prediction];
    out << "\nexplain " << explanation.row->name << " (" << report.source << " line "
        << explanation.row->line << ")\n";
    if (!explanation.inputs) {
      out << "  skipped: " << prediction.skipped << "\n";
      continue;
    }
    char error[32];
    std::snprintf(error, sizeof error, "%+.1f%%", 100 * prediction.signed_error);
    out << "  measured " << seconds(prediction.measured_s) << ", predicted "
        << seconds(prediction.predicted_s) << " (" << error << "), models alone "
        << seconds(prediction.simulated_s) << "\n";
    const std::string left_out = difference(explanation);
    out << "  simulate command for this row ("
        << (left_out.empty() ? "its iteration time is predicted_s" : left_out) << "):\n  "
        << simulate_command_line(llm_simulate_arguments(explanation.options)) << "\n";
    out << "  where its time goes (simulate's summary of the ranks validate runs simulated, one "
           "per pipeline stage: "
        << explanation.results.size() << "):\n"
        << report::format_summary_screen(row_report(explanation));
  }
}

nlohmann::ordered_json explanations_json(const scenario::RunValidationReport& report) {
  nlohmann::ordered_json explanations = nlohmann::ordered_json::array();
  for (const scenario::RunExplanation& explanation : report.explanations) {
    const scenario::RunPrediction& prediction = report.predictions[explanation.prediction];
    nlohmann::ordered_json entry{{"name", explanation.row->name}, {"line", explanation.row->line}};
    if (!explanation.inputs) {
      entry["skipped"] = prediction.skipped;
      explanations.push_back(entry);
      continue;
    }
    const std::vector<std::string> arguments = llm_simulate_arguments(explanation.options);
    entry["measured_s"] = prediction.measured_s;
    entry["predicted_s"] = prediction.predicted_s;
    entry["simulated_s"] = prediction.simulated_s;
    entry["command"] = simulate_command_line(arguments);
    entry["arguments"] = arguments;
    entry["iteration_term_us"] = explanation.iteration_term_us;
    const std::string left_out = difference(explanation);
    entry["difference"] =
        left_out.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(left_out);
    const report::RunReport run = row_report(explanation);
    entry["report"] =
        report::run_report_json(run, explanation.results, explanation.inputs->group_kind);
    explanations.push_back(entry);
  }
  return explanations;
}

}  // namespace perfsim::cli
