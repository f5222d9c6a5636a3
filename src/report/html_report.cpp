#include "report/html_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "io/atomic_file.hpp"
#include "report/printf_string.hpp"
#include "report/rank_classes.hpp"
#include "report/run_breakdown.hpp"
#include "report/svg_chart.hpp"

namespace perfsim::report {
namespace {

const AxisUnit kMilliseconds{"ms", 1000};
const AxisUnit kGibibytes{"GiB", 1024.0 * 1024 * 1024};

// Past this many rows a chart keeps the first ones and says how many it left out.
constexpr std::size_t kMaxChartRows = 40;
constexpr std::size_t kMaxChartRowsPerFate = 15;  // the planner's ranking

std::string ms(double us) {
  return printf_string("%.3f ms", us / 1000);
}

std::string gib(double bytes) {
  return printf_string("%.2f GiB", bytes / kGibibytes.base_per_unit);
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:24px;max-width:1120px;color:#222}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;text-align:left;"
    "border-bottom:1px solid #eee}th{background:#f4f4f4}td.num{text-align:right}"
    ".warning{background:#fff3cd;padding:6px 10px;border-left:4px solid #e0a800}"
    ".caption{color:#555;font-size:13px}svg text.axis{font-weight:bold}";

std::string page_open(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
         html_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" +
         html_escape(title) + "</h1>\n";
}

std::string page_close() {
  return "</body>\n</html>\n";
}

std::string section(const std::string& id, const std::string& heading, const std::string& body) {
  return "<section id=\"" + id + "\">\n<h2>" + html_escape(heading) + "</h2>\n" + body +
         "\n</section>\n";
}

std::string paragraph(const std::string& text, const char* css_class = "caption") {
  return "<p class=\"" + std::string(css_class) + "\">" + html_escape(text) + "</p>\n";
}

std::string table_row(const std::vector<std::string>& cells, const char* tag = "td") {
  std::string out = "<tr>";
  for (const std::string& cell : cells)
    out += "<" + std::string(tag) + ">" + html_escape(cell) + "</" + tag + ">";
  return out + "</tr>\n";
}

std::string summary_section(const RunReport& report) {
  std::string body;
  for (const std::string& warning : report.warnings)
    body += paragraph(warning, "warning");
  body += "<table>\n";
  if (!report.workload.empty())
    body += table_row({"workload", report.workload});
  for (const std::string& line : report.setup)
    body += table_row({"", line});
  body += table_row({"iteration (slowest rank)",
                     ms(report.iteration_us) + " (rank " + std::to_string(report.slowest_rank) +
                         "; mean over " + std::to_string(report.ranks) + " ranks " +
                         ms(report.mean_iteration_us) + ")"});
  if (report.throughput) {
    const Throughput& t = *report.throughput;
    body += table_row({"throughput", printf_string("%.0f tokens/s, %.1f TFLOP/s per GPU",
                                                   t.tokens_per_s, t.model_tflops_per_s_per_gpu)});
    body += table_row({"MFU", printf_string("%.1f%% of %.0f TFLOP/s per GPU", 100 * t.mfu,
                                            t.peak_tflops_per_s_per_gpu)});
  }
  if (report.ideal_bubble_fraction)
    body += table_row({"ideal 1F1B bubble", printf_string("%.1f%% of the iteration",
                                                          100 * *report.ideal_bubble_fraction)});
  if (report.memory)
    body += table_row({"memory", report.memory->verdict});
  return section("summary", "Summary", body + "</table>\n");
}

std::string pipeline_section(const RunReport& report) {
  if (report.pipeline.empty())
    return section("pipeline", "Pipeline schedule",
                   paragraph("No pipeline schedule: this run has no pipeline stages, or its "
                             "workload does not label forward and backward micro-batches "
                             "(generated LLM workloads do)."));
  int chunks = 1;
  for (const PipelineStageSteps& stage : report.pipeline)
    for (const StepSpan& step : stage.steps)
      chunks = std::max(chunks, step.chunk + 1);
  GanttChart chart;
  chart.title = "pipeline schedule: forward and backward of each micro-batch per stage";
  chart.time_label = "time from iteration start";
  chart.unit = kMilliseconds;
  for (const char* phase : {"forward", "backward"})
    for (int chunk = 0; chunk < chunks; ++chunk)
      chart.series.push_back(chunks == 1 ? std::string(phase)
                                         : std::string(phase) + " chunk " + std::to_string(chunk));
  for (const PipelineStageSteps& stage : report.pipeline) {
    GanttLane lane;
    lane.label =
        "stage " + std::to_string(stage.stage) + " (rank " + std::to_string(stage.rank) + ")";
    for (const StepSpan& step : stage.steps) {
      if (step.start_us < 0)
        continue;
      GanttBar bar;
      bar.start = step.start_us;
      bar.end = step.end_us;
      bar.series = static_cast<std::size_t>((step.phase == "backward" ? chunks : 0) + step.chunk);
      bar.text = std::to_string(step.micro_batch);
      bar.tooltip = "stage " + std::to_string(stage.stage) + ", " + step.phase +
                    " of micro-batch " + std::to_string(step.micro_batch) +
                    (chunks > 1 ? " (chunk " + std::to_string(step.chunk) + ")" : "") + ": " +
                    ms(step.start_us) + " to " + ms(step.end_us) + " (" +
                    ms(step.end_us - step.start_us) + ")";
      lane.bars.push_back(std::move(bar));
    }
    chart.lanes.push_back(std::move(lane));
  }
  return section(
      "pipeline", "Pipeline schedule",
      paragraph("Each bar is one micro-batch's forward or backward on the stage's first rank "
                "(micro-batches numbered from 0): from its first kernel's start to its last "
                "kernel's end, tensor-parallel waits inside it included. Gaps between bars are "
                "the pipeline bubble, stage-boundary transfers and the work outside the "
                "micro-batches (gradient reduction, optimizer).") +
          svg_gantt(chart));
}

std::string breakdown_section(const RunReport& report, std::span<const RankResult> results,
                              const GroupKindOf& kind_of) {
  StackedBarChart chart;
  chart.title = "where the time goes per class of identical ranks";
  chart.value_label = "time per iteration";
  chart.unit = kMilliseconds;
  for (const BreakdownLine& line : report.breakdown)
    chart.series.push_back(line.label);
  const std::vector<RankClass> classes = rank_classes(results);
  for (std::size_t i = 0; i < classes.size() && i < kMaxChartRows; ++i) {
    const RankClass& rank_class = classes[i];
    const std::map<std::string, double> lines = rank_breakdown(*rank_class.representative, kind_of);
    StackedBarRow row;
    row.label =
        (rank_class.ranks.size() == 1 ? "rank " : "ranks ") + format_rank_list(rank_class.ranks, 2);
    for (const BreakdownLine& line : report.breakdown) {
      const auto found = lines.find(line.key);
      row.values.push_back(found == lines.end() ? 0 : found->second);
    }
    row.note = ms(rank_class.representative->iteration_us);
    chart.rows.push_back(std::move(row));
  }
  std::string caption =
      "One bar per class of ranks with identical results; the parts add up to the class's "
      "iteration time (a negative rest, where compute kernels of several streams overlap, is "
      "drawn as 0).";
  if (classes.size() > kMaxChartRows)
    caption += " The first " + std::to_string(kMaxChartRows) + " of " +
               std::to_string(classes.size()) + " classes are drawn.";
  return section("breakdown", "Where the time goes", paragraph(caption) + svg_stacked_bars(chart));
}

std::string memory_section(const RunReport& report) {
  if (!report.memory)
    return section("memory", "Memory per stage",
                   paragraph("No memory model for this workload (generated LLM workloads have "
                             "one; `perfsim memory TRACE` replays a trace's allocations)."));
  const MemoryFigures& memory = *report.memory;
  StackedBarChart chart;
  chart.title = "peak memory per pipeline stage against the device";
  chart.value_label = "memory per GPU";
  chart.unit = kGibibytes;
  chart.series = {"parameters", "gradients", "optimizer state", "activations",
                  "other (FP8 copies, CUDA context)"};
  for (const StageMemoryFigure& stage : memory.stages) {
    chart.rows.push_back(
        {"stage " + std::to_string(stage.stage),
         {static_cast<double>(stage.parameter_bytes), static_cast<double>(stage.gradient_bytes),
          static_cast<double>(stage.optimizer_bytes), static_cast<double>(stage.activation_bytes),
          static_cast<double>(stage.other_bytes)},
         gib(static_cast<double>(stage.total_bytes))});
  }
  if (memory.capacity_bytes) {
    chart.reference = static_cast<double>(*memory.capacity_bytes);
    chart.reference_label = memory.device + " capacity " + gib(chart.reference.value());
  }
  return section("memory", "Memory per stage", paragraph(memory.verdict) + svg_stacked_bars(chart));
}

std::string communication_section(std::span<const RankResult> results, const GroupKindOf& kind_of) {
  struct KindTotals {
    std::int64_t collectives = 0;
    double bytes = 0;
    double time_us = 0;
    double exposed_us = 0;
    double before_start_us = 0;
  };
  std::map<std::string, KindTotals> kinds;
  for (const RankResult& result : results) {
    for (const auto& [group, traffic] : result.groups) {
      KindTotals& totals = kinds[kind_of(group)];
      totals.collectives += traffic.collectives;
      totals.bytes += static_cast<double>(traffic.bytes);
      totals.time_us += traffic.time_us;
      totals.exposed_us += traffic.exposed_us;
      totals.before_start_us += traffic.exposed_before_start_us;
    }
  }
  if (kinds.empty())
    return section("communication", "Communication per group kind",
                   paragraph("No communication in this run."));
  const double ranks = static_cast<double>(std::max<std::size_t>(results.size(), 1));
  StackedBarChart chart;
  chart.title = "communication per group kind, mean per rank (collectives and bytes too)";
  chart.value_label = "time per rank and iteration";
  chart.unit = kMilliseconds;
  chart.series = {"compute waiting for the other members to arrive",
                  "compute waiting for the transfer", "overlapped with compute"};
  for (const auto& [kind, totals] : kinds) {
    const double exposed_transfer = totals.exposed_us - totals.before_start_us;
    chart.rows.push_back({group_kind_label(kind),
                          {totals.before_start_us / ranks, exposed_transfer / ranks,
                           std::max(0.0, totals.time_us - exposed_transfer) / ranks},
                          printf_string("%.0f collectives, %.3f GB sent",
                                        totals.collectives / ranks, totals.bytes / ranks / 1e9)});
  }
  return section("communication", "Communication per group kind",
                 paragraph("Summed over a rank's collectives of each kind and averaged over "
                           "ranks: the time compute waited (before the collective could start, "
                           "and while it ran), and the rest of the collectives' time, hidden "
                           "under compute.") +
                     svg_stacked_bars(chart));
}

std::string provenance_section(const RunReport& report) {
  std::string body = "<ul>\n";
  for (const std::string& line : report.provenance)
    body += "<li>" + html_escape(line) + "</li>\n";
  body += "</ul>\n";
  body +=
      paragraph(printf_string("Simulated %zu ops in %.2f s.", report.simulated_ops, report.wall_s));
  return section("provenance", "Models and inputs", body);
}

std::string run_sections(const RunReport& report, std::span<const RankResult> results,
                         const GroupKindOf& kind_of) {
  return summary_section(report) + pipeline_section(report) +
         breakdown_section(report, results, kind_of) + memory_section(report) +
         communication_section(results, kind_of) + provenance_section(report);
}

// Why a layout was not the one chosen, in a sentence.
std::string why(const PlannedLayout& layout, double best_us, double kth_best_us,
                const std::optional<Bytes>& capacity) {
  switch (layout.fate) {
    case LayoutFate::kChosen:
      return "fastest simulated layout";
    case LayoutFate::kRanked:
      return printf_string("%.1f%% slower than the chosen layout",
                           100 * (layout.iteration_us / best_us - 1));
    case LayoutFate::kSlower:
      return printf_string("simulated, %.1f%% slower than the chosen layout and outside the top",
                           100 * (layout.iteration_us / best_us - 1));
    case LayoutFate::kPruned:
      return "not simulated: its lower bound " + ms(layout.iteration_us) +
             " cannot beat the last of the top (" + ms(kth_best_us) + ")";
    case LayoutFate::kOutOfMemory:
      return "out of memory: its worst stage needs " + gib(static_cast<double>(layout.peak_bytes)) +
             (capacity ? ", " + gib(static_cast<double>(layout.peak_bytes - *capacity)) +
                             " more than the device holds"
                       : std::string());
  }
  return "";
}

std::string ranking_section(const PlanPage& plan) {
  double best_us = 0, kth_best_us = 0;
  for (const PlannedLayout& layout : plan.layouts) {
    if (layout.fate == LayoutFate::kChosen)
      best_us = layout.iteration_us;
    if (layout.fate == LayoutFate::kChosen || layout.fate == LayoutFate::kRanked)
      kth_best_us = std::max(kth_best_us, layout.iteration_us);
  }
  StackedBarChart timed;
  timed.title = "layouts by iteration time";
  timed.value_label = "iteration time (simulated; lower bound for pruned layouts)";
  timed.unit = kMilliseconds;
  timed.series = {"chosen", "top", "simulated, slower", "pruned (lower bound)"};
  StackedBarChart memory;
  memory.title = "layouts that do not fit, by peak memory";
  memory.value_label = "peak memory of the worst stage per GPU";
  memory.unit = kGibibytes;
  memory.series = {"out of memory"};
  if (plan.capacity_bytes) {
    memory.reference = static_cast<double>(*plan.capacity_bytes);
    memory.reference_label = "capacity " + gib(static_cast<double>(*plan.capacity_bytes));
  }
  std::map<LayoutFate, std::size_t> drawn_of_fate;
  std::string table =
      "<table>\n" +
      table_row({"#", "layout", "fate", "iteration", "MFU", "peak memory", "why not chosen"}, "th");
  int index = 0;
  for (const PlannedLayout& layout : plan.layouts) {
    const bool simulated =
        layout.fate != LayoutFate::kPruned && layout.fate != LayoutFate::kOutOfMemory;
    table += table_row(
        {std::to_string(++index), layout.layout, layout_fate_name(layout.fate),
         layout.fate == LayoutFate::kOutOfMemory
             ? "-"
             : (layout.fate == LayoutFate::kPruned ? ">= " : "") + ms(layout.iteration_us),
         simulated ? printf_string("%.1f%%", 100 * layout.mfu) : "-",
         gib(static_cast<double>(layout.peak_bytes)),
         why(layout, best_us, kth_best_us, plan.capacity_bytes)});
    // Each fate gets its own rows in the chart, so the pruned ones show even behind many
    // simulated ones.
    if (++drawn_of_fate[layout.fate] > kMaxChartRowsPerFate)
      continue;
    if (layout.fate == LayoutFate::kOutOfMemory) {
      memory.rows.push_back({layout.layout, {static_cast<double>(layout.peak_bytes)}, ""});
    } else {
      std::vector<double> values(4, 0.0);
      values[static_cast<std::size_t>(layout.fate)] = layout.iteration_us;
      timed.rows.push_back({layout.layout, values, ms(layout.iteration_us)});
    }
  }
  table += "</table>\n";
  std::string body = paragraph(
      "Every layout the planner considered, in the order it ranks them: the top "
      "by simulated iteration time, the others simulated, those pruned by a lower "
      "bound (a time no simulation of them can beat), and those that do not fit.");
  body += svg_stacked_bars(timed);
  if (!memory.rows.empty())
    body += svg_stacked_bars(memory);
  std::string left_out;
  for (const auto& [fate, total] : drawn_of_fate)
    if (total > kMaxChartRowsPerFate)
      left_out += std::string(left_out.empty() ? "" : ", ") + "the first " +
                  std::to_string(kMaxChartRowsPerFate) + " of " + std::to_string(total) + " " +
                  layout_fate_name(fate);
  if (!left_out.empty())
    body += paragraph("Drawn: " + left_out + " (all in the table).");
  return section("ranking", "Layouts ranked", body + table);
}

}  // namespace

const char* layout_fate_name(LayoutFate fate) {
  switch (fate) {
    case LayoutFate::kChosen:
      return "chosen";
    case LayoutFate::kRanked:
      return "top";
    case LayoutFate::kSlower:
      return "slower";
    case LayoutFate::kPruned:
      return "pruned";
    case LayoutFate::kOutOfMemory:
      return "out of memory";
  }
  return "";
}

std::string render_run_html(const RunReport& report, std::span<const RankResult> results,
                            const GroupKindOf& kind_of) {
  return page_open("perfsim: " + (report.workload.empty() ? "simulation" : report.workload)) +
         run_sections(report, results, kind_of) + page_close();
}

std::string render_plan_html(const PlanPage& plan, const RunReport* best,
                             std::span<const RankResult> best_results, const GroupKindOf& kind_of) {
  std::string body = page_open("perfsim plan: " + plan.title);
  std::string lines;
  for (const std::string& line : plan.lines)
    lines += paragraph(line, "summary");
  body += section("search", "Search", lines);
  body += ranking_section(plan);
  if (best) {
    body += "<h2>Chosen layout</h2>\n";
    body += run_sections(*best, best_results, kind_of);
  }
  return body + page_close();
}

void write_html_report(const std::string& path, const std::string& html) {
  io::write_file_atomically(path, html);
}

}  // namespace perfsim::report
