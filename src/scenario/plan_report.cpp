#include "scenario/plan_report.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "report/run_breakdown.hpp"
#include "report/run_report_json.hpp"
#include "scenario/llm_calibration.hpp"
#include "scenario/llm_report.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;
using Json = nlohmann::ordered_json;

Json layout_json(const planner::LayoutScore& score) {
  const llm::ParallelConfig& p = score.parallel;
  return {
      {"layout", planner::short_layout_name(p)},
      {"tp", p.tp},
      {"cp", p.cp},
      {"pp", p.pp},
      {"virtual_stages", p.virtual_stages},
      {"first_stage_layers", p.first_stage_layers},
      {"last_stage_layers", p.last_stage_layers},
      {"dp", p.dp},
      {"ep", p.ep},
      {"etp", p.expert_tp()},
      {"micro_batch", p.micro_batch},
      {"zero", p.zero_stage},
      {"sequence_parallel", p.sequence_parallel},
      {"recompute", std::string(llm::recompute_name(p.recompute))},
      {"recompute_modules", p.recompute == llm::Recompute::kSelective
                                ? llm::recompute_modules_name(p.recompute_modules)
                                : std::string()},
      {"order", llm::rank_order_name(p.order)},
      {"moe_token_dispatcher", std::string(llm::moe_token_dispatcher_name(p.moe_token_dispatcher))},
      {"moe_flex_backend", p.moe_flex()
                               ? Json(std::string(llm::moe_flex_backend_name(p.moe_flex_backend)))
                               : Json(nullptr)},
      {"moe_a2a_overlap", p.moe_a2a_overlap},
      {"delay_wgrad_compute", p.delay_wgrad_compute},
      {"moe_shared_expert_overlap", p.moe_shared_expert_overlap},
      {"iteration_us", score.iteration_us},
      {"mfu", score.mfu},
      {"peak_bytes", score.peak_bytes},
      {"headroom_bytes", score.headroom_bytes},
      {"dominant_comm", score.dominant_comm},
      {"dominant_exposed_us", score.dominant_exposed_us}};
}

}  // namespace

BestLayoutReport best_layout_report(const PlanRequest& request, const planner::LayoutScore& best,
                                    const std::string& device_name, double peak_flops_per_s) {
  const LlmScenario scenario = layout_scenario(request, best.parallel);
  BestLayoutReport out;
  out.parallel = best.parallel;
  out.results = simulate_layout(scenario, SimulatedRanks::kPipelineRepresentatives).results;
  const auto kind_of = [parallel = best.parallel](const std::string& group) {
    return llm_group_kind(group, parallel);
  };
  out.report = report::build_run_report(out.results, kind_of);
  const LlmReportContext context{scenario, peak_flops_per_s, request.device_memory, device_name};
  complete_llm_report(context, out.results, out.report);
  out.report.setup.push_back(
      "one rank per pipeline stage simulated (tensor/data-parallel index 0; exact on a "
      "symmetric topology)");
  out.report.setup.push_back("calibration: " + describe_calibration(request.calibration));
  return out;
}

Json plan_json(const PlanRequest& request, const PlanOutcome& outcome, const BestLayoutReport* best,
               double wall_s) {
  Json doc;
  doc["schema"] = kPlanSchema;
  doc["model"] = request.model.name;
  doc["gpus"] = request.limits.gpus;
  doc["topology"] = request.topology.name;
  doc["device_file"] = request.device_file;
  doc["layouts"] = outcome.layouts;
  doc["out_of_memory"] = outcome.out_of_memory;
  doc["simulated"] = outcome.search.simulated;
  doc["pruned"] = outcome.search.pruned;
  Json top = Json::array();
  for (const planner::LayoutScore& score : outcome.search.top)
    top.push_back(layout_json(score));
  doc["top"] = top;
  if (best) {
    const auto kind_of = [parallel = best->parallel](const std::string& group) {
      return llm_group_kind(group, parallel);
    };
    doc["best"] = report::run_report_json(best->report, best->results, kind_of);
  } else {
    doc["best"] = nullptr;
  }
  if (const auto leanest = leanest_not_fitting(outcome)) {
    const memory::StageMemory& worst = leanest->memory.worst();
    Json lean;
    lean["layout"] = planner::short_layout_name(leanest->parallel);
    lean["stage"] = worst.stage;
    lean["total_bytes"] = worst.total_bytes;
    lean["capacity_bytes"] =
        request.device_memory.capacity_bytes ? Json(*request.device_memory.capacity_bytes) : Json();
    doc["leanest_out_of_memory"] = lean;
  }
  doc["wall_s"] = wall_s;
  return doc;
}

std::optional<planner::FittingLayout> leanest_not_fitting(const PlanOutcome& outcome) {
  if (!outcome.search.top.empty() || outcome.not_fitting.empty())
    return std::nullopt;
  return *std::min_element(outcome.not_fitting.begin(), outcome.not_fitting.end(),
                           [](const planner::FittingLayout& a, const planner::FittingLayout& b) {
                             return a.memory.worst().total_bytes < b.memory.worst().total_bytes;
                           });
}

std::string nothing_fits_text(const planner::FittingLayout& leanest,
                              const memory::DeviceMemory& device) {
  const memory::StageMemory& worst = leanest.memory.worst();
  const Bytes capacity = device.capacity_bytes.value_or(0);
  std::string text = "no layout fits in " + memory::format_bytes(capacity) +
                     " per GPU: the leanest, " + planner::short_layout_name(leanest.parallel) +
                     ", needs " + memory::format_bytes(worst.total_bytes) + " on stage " +
                     std::to_string(worst.stage);
  if (capacity > 0) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, " (%.1fx the capacity)",
                  static_cast<double>(worst.total_bytes) / static_cast<double>(capacity));
    text += ratio;
  }
  return text +
         ". More GPUs (--gpus, --nodes) would shard parameters, gradients and optimizer state "
         "further; a device with more memory (--capacity-GB) would hold them\n";
}

report::PlanPage plan_page(const PlanRequest& request, const PlanOutcome& outcome,
                           const std::string& device_name) {
  report::PlanPage page;
  page.title = request.model.name + " on " + std::to_string(request.limits.gpus) + " x " +
               device_name + " (" + request.topology.name + ")";
  page.lines.push_back(
      std::to_string(outcome.layouts) +
      " layouts divide the model and the GPUs: " + std::to_string(outcome.out_of_memory) +
      " do not fit in memory, " + std::to_string(outcome.search.simulated) + " simulated, " +
      std::to_string(outcome.search.pruned) + " pruned by their lower bound.");
  page.capacity_bytes = request.device_memory.capacity_bytes;
  std::set<std::string> in_top;
  for (const planner::LayoutScore& score : outcome.search.top) {
    in_top.insert(planner::short_layout_name(score.parallel));
    page.layouts.push_back(
        {planner::short_layout_name(score.parallel),
         page.layouts.empty() ? report::LayoutFate::kChosen : report::LayoutFate::kRanked,
         score.iteration_us, score.mfu, score.peak_bytes});
  }
  std::vector<planner::LayoutScore> slower;
  for (const planner::LayoutScore& score : outcome.simulated)
    if (!in_top.count(planner::short_layout_name(score.parallel)))
      slower.push_back(score);
  std::sort(slower.begin(), slower.end(),
            [](const planner::LayoutScore& a, const planner::LayoutScore& b) {
              return a.iteration_us < b.iteration_us;
            });
  for (const planner::LayoutScore& score : slower)
    page.layouts.push_back({planner::short_layout_name(score.parallel), report::LayoutFate::kSlower,
                            score.iteration_us, score.mfu, score.peak_bytes});
  auto pruned = outcome.pruned;
  std::sort(pruned.begin(), pruned.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  for (const auto& [layout, bound_us] : pruned)
    page.layouts.push_back({planner::short_layout_name(layout.parallel),
                            report::LayoutFate::kPruned, bound_us, 0,
                            layout.memory.worst().total_bytes});
  auto not_fitting = outcome.not_fitting;
  std::sort(not_fitting.begin(), not_fitting.end(),
            [](const planner::FittingLayout& a, const planner::FittingLayout& b) {
              return a.memory.worst().total_bytes < b.memory.worst().total_bytes;
            });
  for (const planner::FittingLayout& layout : not_fitting)
    page.layouts.push_back({planner::short_layout_name(layout.parallel),
                            report::LayoutFate::kOutOfMemory, 0, 0,
                            layout.memory.worst().total_bytes});
  return page;
}

std::string plan_csv(const PlanOutcome& outcome) {
  std::string out =
      "rank,layout,tp,cp,pp,virtual_stages,dp,micro_batch,zero,sequence_parallel,recompute,"
      "iteration_us,mfu,peak_bytes,headroom_bytes,dominant_comm,dominant_exposed_us\n";
  int rank = 0;
  for (const planner::LayoutScore& score : outcome.search.top) {
    const llm::ParallelConfig& p = score.parallel;
    char line[512];
    std::snprintf(
        line, sizeof line, "%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%s,%.17g,%.17g,%lld,%lld,%s,%.17g\n",
        ++rank, planner::short_layout_name(p).c_str(), p.tp, p.cp, p.pp, p.virtual_stages, p.dp,
        p.micro_batch, p.zero_stage, p.sequence_parallel ? 1 : 0,
        std::string(llm::recompute_name(p.recompute)).c_str(), score.iteration_us, score.mfu,
        static_cast<long long>(score.peak_bytes), static_cast<long long>(score.headroom_bytes),
        score.dominant_comm.c_str(), score.dominant_exposed_us);
    out += line;
  }
  return out;
}

}  // namespace perfsim::scenario
