#include "report/summary_screen.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "memory/device_memory.hpp"
#include "report/printf_string.hpp"

namespace perfsim::report {
namespace {

std::string percent_of(double part, double whole) {
  return whole > 0 ? printf_string("%5.1f %%", 100 * part / whole) : std::string("    - ");
}

std::string gib(Bytes bytes) {
  return printf_string("%.2f", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string stage_line(const StageMemoryFigure& stage) {
  return printf_string(
      "  stage %-3d %9s GiB = parameters %s + gradients %s + optimizer %s + "
      "activations %s + other %s",
      stage.stage, gib(stage.total_bytes).c_str(), gib(stage.parameter_bytes).c_str(),
      gib(stage.gradient_bytes).c_str(), gib(stage.optimizer_bytes).c_str(),
      gib(stage.activation_bytes).c_str(), gib(stage.other_bytes).c_str());
}

// Up to four stages in full; deeper pipelines the first, the worst and the last.
std::vector<std::string> memory_lines(const MemoryFigures& memory) {
  std::vector<std::string> lines;
  std::string verdict = memory.verdict;
  lines.push_back("memory per GPU (closed form): " + verdict + " (worst: stage " +
                  std::to_string(memory.worst_stage) + ")");
  const std::size_t count = memory.stages.size();
  std::size_t shown = 0;
  for (const StageMemoryFigure& stage : memory.stages) {
    const bool keep = count <= 4 || stage.stage == 0 || stage.stage == memory.worst_stage ||
                      static_cast<std::size_t>(stage.stage) + 1 == count;
    if (!keep)
      continue;
    lines.push_back(stage_line(stage));
    ++shown;
  }
  if (shown < count)
    lines.push_back("  (" + std::to_string(count - shown) + " more stages: --detail memory)");
  return lines;
}

}  // namespace

std::string format_duration(double us) {
  return printf_string(std::fabs(us) >= 1e5 ? "%.2f ms" : "%.3f ms", us / 1000);
}

std::string format_summary_screen(const RunReport& report, std::size_t max_lines) {
  // Caveats first, but never so many that they push the answer off the screen.
  constexpr std::size_t kMaxWarnings = 5;
  std::vector<std::string> lines(
      report.warnings.begin(),
      report.warnings.begin() +
          static_cast<std::ptrdiff_t>(std::min(report.warnings.size(), kMaxWarnings)));
  if (report.warnings.size() > kMaxWarnings)
    lines.push_back("(" + std::to_string(report.warnings.size() - kMaxWarnings) +
                    " more warnings: --format json lists them all)");
  if (!report.workload.empty())
    lines.push_back(report.workload);
  for (const std::string& line : report.setup)
    lines.push_back("  " + line);
  lines.push_back(
      printf_string("iteration time      %s (slowest rank %d of %d simulated; mean "
                    "over ranks %s)",
                    format_duration(report.iteration_us).c_str(), report.slowest_rank, report.ranks,
                    format_duration(report.mean_iteration_us).c_str()));
  if (report.throughput) {
    const Throughput& t = *report.throughput;
    lines.push_back(printf_string(
        "throughput          %.0f tokens/s, %.1f TFLOP/s per GPU, MFU %.1f %% of %.1f TFLOP/s",
        t.tokens_per_s, t.model_tflops_per_s_per_gpu, 100 * t.mfu, t.peak_tflops_per_s_per_gpu));
  }
  if (!report.breakdown.empty()) {
    // One unit for the whole table, so the columns line up and compare.
    const bool in_ms = report.iteration_us >= 1000;
    const double scale = in_ms ? 1e-3 : 1.0;
    const char* number = report.iteration_us >= 1e5 ? "%12.2f" : "%12.3f";
    lines.push_back(printf_string("%-40s%12s %7s %12s",
                                  in_ms ? "where the time goes (ms)" : "where the time goes (us)",
                                  "slowest rank", "", "rank mean"));
    bool has_bubble = false;
    for (const BreakdownLine& line : report.breakdown) {
      std::string text = printf_string("  %-38s", line.label.c_str()) +
                         printf_string(number, line.slowest_rank_us * scale) + " " +
                         percent_of(line.slowest_rank_us, report.iteration_us) + " " +
                         printf_string(number, line.mean_us * scale) + " " +
                         percent_of(line.mean_us, report.mean_iteration_us);
      if (line.key == "bubble" && report.ideal_bubble_fraction) {
        has_bubble = true;
        text += printf_string("  (1F1B ideal %.1f %%)", 100 * *report.ideal_bubble_fraction);
      }
      lines.push_back(text);
    }
    if (has_bubble)
      lines.push_back(
          "  bubble: waiting for the neighbouring stage to reach its send/receive; p2p "
          "transfer: waiting while the data moves");
  }
  if (report.memory) {
    const std::vector<std::string> memory = memory_lines(*report.memory);
    lines.insert(lines.end(), memory.begin(), memory.end());
  }
  if (lines.size() > max_lines) {
    lines.resize(max_lines - 1);
    lines.push_back("(summary cut to " + std::to_string(max_lines) +
                    " lines: --format json has "
                    "every figure)");
  }
  std::string out;
  for (const std::string& line : lines)
    out += line + "\n";
  return out;
}

std::string format_run_footer(const RunReport& report) {
  std::string out;
  for (const std::string& line : report.provenance)
    out += line + "\n";
  if (!report.results_path.empty())
    out += "results: " + report.results_path + " (group /runs/" + report.run_name +
           "; every rank, stream and group)\n";
  if (!report.timeline_path.empty())
    out += "timeline: " + report.timeline_path + " (open in ui.perfetto.dev)\n";
  if (!report.available_details.empty()) {
    out += "more: --detail ";
    for (std::size_t i = 0; i < report.available_details.size(); ++i)
      out += (i > 0 ? "," : "") + report.available_details[i];
    out += "; --format json|csv\n";
  }
  out += printf_string("simulator: %zu ops on %d ranks in %.3f s wall\n", report.simulated_ops,
                       report.ranks, report.wall_s);
  return out;
}

}  // namespace perfsim::report
