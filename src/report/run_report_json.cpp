#include "report/run_report_json.hpp"

#include <cstdio>
#include <map>

#include "report/rank_classes.hpp"

namespace perfsim::report {
namespace {

using Json = nlohmann::ordered_json;

// [[first, last], ...] of ascending ranks: a class of 2,048 ranks stays one pair.
Json rank_ranges(const std::vector<int>& ranks) {
  Json ranges = Json::array();
  for (int rank : ranks) {
    if (!ranges.empty() && ranges.back()[1].get<int>() + 1 == rank)
      ranges.back()[1] = rank;
    else
      ranges.push_back({rank, rank});
  }
  return ranges;
}

Json rank_classes_json(std::span<const RankResult> results) {
  Json classes = Json::array();
  for (const RankClass& rank_class : rank_classes(results)) {
    const RankResult& r = *rank_class.representative;
    classes.push_back({{"ranks", rank_ranges(rank_class.ranks)},
                       {"count", rank_class.ranks.size()},
                       {"iteration_us", r.iteration_us},
                       {"cpu_us", r.cpu_us},
                       {"gpu_busy_us", r.gpu_busy_us},
                       {"gpu_idle_us", r.gpu_idle_us},
                       {"embedding_lookup_us", r.by_category_us[0]},
                       {"gemm_us", r.by_category_us[1]},
                       {"memory_us", r.by_category_us[2]},
                       {"other_us", r.by_category_us[3]},
                       {"communication_us", r.by_category_us[4]}});
  }
  return classes;
}

Json group_kinds_json(std::span<const RankResult> results, const GroupKindOf& kind_of) {
  struct Totals {
    std::int64_t collectives = 0;
    double bytes = 0, time_us = 0, exposed_us = 0, before_start_us = 0;
  };
  std::map<std::string, Totals> kinds;
  for (const RankResult& result : results) {
    for (const auto& [group, traffic] : result.groups) {
      Totals& totals = kinds[kind_of(group)];
      totals.collectives += traffic.collectives;
      totals.bytes += static_cast<double>(traffic.bytes);
      totals.time_us += traffic.time_us;
      totals.exposed_us += traffic.exposed_us;
      totals.before_start_us += traffic.exposed_before_start_us;
    }
  }
  const double ranks = results.empty() ? 1.0 : static_cast<double>(results.size());
  Json out = Json::array();
  for (const auto& [kind, totals] : kinds)
    out.push_back({{"kind", kind},
                   {"label", group_kind_label(kind)},
                   {"collectives", totals.collectives},
                   {"bytes", totals.bytes},
                   {"time_us", totals.time_us},
                   {"exposed_mean_us", totals.exposed_us / ranks},
                   {"exposed_before_start_mean_us", totals.before_start_us / ranks}});
  return out;
}

Json memory_json(const MemoryFigures& memory) {
  Json stages = Json::array();
  for (const StageMemoryFigure& stage : memory.stages)
    stages.push_back({{"stage", stage.stage},
                      {"total_bytes", stage.total_bytes},
                      {"parameter_bytes", stage.parameter_bytes},
                      {"gradient_bytes", stage.gradient_bytes},
                      {"optimizer_bytes", stage.optimizer_bytes},
                      {"activation_bytes", stage.activation_bytes},
                      {"other_bytes", stage.other_bytes}});
  return {{"device", memory.device},
          {"capacity_bytes", memory.capacity_bytes ? Json(*memory.capacity_bytes) : Json()},
          {"fits", memory.fits},
          {"worst_stage", memory.worst_stage},
          {"margin_bytes", memory.margin_bytes},
          {"verdict", memory.verdict},
          {"stages", stages}};
}

}  // namespace

Json run_report_json(const RunReport& report, std::span<const RankResult> results,
                     const GroupKindOf& kind_of) {
  Json doc;
  doc["schema"] = kSimulateSchema;
  doc["workload"] = report.workload;
  doc["setup"] = report.setup;
  doc["warnings"] = report.warnings;
  doc["provenance"] = report.provenance;
  doc["ranks"] = report.ranks;
  doc["iteration_us"] = report.iteration_us;
  doc["slowest_rank"] = report.slowest_rank;
  doc["mean_iteration_us"] = report.mean_iteration_us;
  if (report.throughput) {
    const Throughput& t = *report.throughput;
    doc["throughput"] = {{"tokens_per_iteration", t.tokens_per_iteration},
                         {"tokens_per_s", t.tokens_per_s},
                         {"model_flops_per_iteration", t.model_flops_per_iteration},
                         {"model_tflops_per_s_per_gpu", t.model_tflops_per_s_per_gpu},
                         {"peak_tflops_per_s_per_gpu", t.peak_tflops_per_s_per_gpu},
                         {"mfu", t.mfu},
                         {"flops_formula", t.flops_formula}};
  } else {
    doc["throughput"] = nullptr;
  }
  Json breakdown = Json::array();
  for (const BreakdownLine& line : report.breakdown)
    breakdown.push_back({{"key", line.key},
                         {"label", line.label},
                         {"definition", line.definition},
                         {"slowest_rank_us", line.slowest_rank_us},
                         {"mean_us", line.mean_us}});
  doc["breakdown"] = breakdown;
  doc["ideal_bubble_fraction"] =
      report.ideal_bubble_fraction ? Json(*report.ideal_bubble_fraction) : Json();
  doc["memory"] = report.memory ? memory_json(*report.memory) : Json();
  doc["rank_classes"] = rank_classes_json(results);
  doc["group_kinds"] = group_kinds_json(results, kind_of);
  doc["results"] = report.results_path.empty()
                       ? Json()
                       : Json{{"path", report.results_path}, {"run", report.run_name}};
  doc["simulator"] = {{"ops", report.simulated_ops}, {"wall_s", report.wall_s}};
  return doc;
}

std::string run_report_csv(const RunReport& report) {
  std::string out = "figure,value,unit\n";
  auto row = [&](const std::string& figure, double value, const char* unit) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", value);
    out += figure + "," + text + "," + unit + "\n";
  };
  row("ranks", report.ranks, "");
  row("iteration_us", report.iteration_us, "us");
  row("slowest_rank", report.slowest_rank, "");
  row("mean_iteration_us", report.mean_iteration_us, "us");
  if (report.throughput) {
    const Throughput& t = *report.throughput;
    row("throughput.tokens_per_s", t.tokens_per_s, "tokens/s");
    row("throughput.model_tflops_per_s_per_gpu", t.model_tflops_per_s_per_gpu, "TFLOP/s");
    row("throughput.peak_tflops_per_s_per_gpu", t.peak_tflops_per_s_per_gpu, "TFLOP/s");
    row("throughput.mfu", t.mfu, "fraction");
  }
  for (const BreakdownLine& line : report.breakdown) {
    row("breakdown." + line.key + ".slowest_rank_us", line.slowest_rank_us, "us");
    row("breakdown." + line.key + ".mean_us", line.mean_us, "us");
  }
  if (report.ideal_bubble_fraction)
    row("ideal_bubble_fraction", *report.ideal_bubble_fraction, "fraction");
  if (report.memory) {
    row("memory.fits", report.memory->fits ? 1 : 0, "bool");
    row("memory.margin_bytes", report.memory->margin_bytes, "bytes");
    for (const StageMemoryFigure& stage : report.memory->stages)
      row("memory.stage." + std::to_string(stage.stage) + ".total_bytes",
          static_cast<double>(stage.total_bytes), "bytes");
  }
  row("simulator.ops", static_cast<double>(report.simulated_ops), "");
  row("simulator.wall_s", report.wall_s, "s");
  return out;
}

}  // namespace perfsim::report
