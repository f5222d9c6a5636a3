#pragma once
// What `perfsim plan` reports: the best layout's summary screen (its pipeline representatives
// simulated once more, the same figures `simulate --model` prints), the ranked table, and the
// JSON / CSV forms (schema "perfsim-plan/1", docs/output-formats.md).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "report/html_report.hpp"
#include "report/run_report.hpp"
#include "scenario/plan_simulation.hpp"

namespace perfsim::scenario {

inline constexpr const char* kPlanSchema = "perfsim-plan/1";

struct BestLayoutReport {
  report::RunReport report;
  std::vector<RankResult> results;  // one representative rank per pipeline stage
  generators::llm::ParallelConfig parallel;
};

// Simulates `best` (pipeline representatives) and builds its report.
BestLayoutReport best_layout_report(const PlanRequest& request, const planner::LayoutScore& best,
                                    const std::string& device_name, double peak_flops_per_s);

nlohmann::ordered_json plan_json(const PlanRequest& request, const PlanOutcome& outcome,
                                 const BestLayoutReport* best, double wall_s);

// Every layout the plan considered, for the HTML report: the top (the chosen first), the other
// simulated ones, the pruned ones and those that do not fit, each group in its order.
report::PlanPage plan_page(const PlanRequest& request, const PlanOutcome& outcome,
                           const std::string& device_name);

// One row per ranked layout: "rank,layout,tp,cp,pp,virtual_stages,dp,micro_batch,zero,
// sequence_parallel,recompute,iteration_us,mfu,peak_bytes,headroom_bytes,dominant_comm,
// dominant_exposed_us".
std::string plan_csv(const PlanOutcome& outcome);

// When layouts divide the model but none fits in memory: the one whose worst stage needs the
// least (what a user must make room for). Empty when a layout fits or none was enumerated.
std::optional<planner::FittingLayout> leanest_not_fitting(const PlanOutcome& outcome);
// The text `plan` prints then: that layout, its need against the capacity, what would help.
std::string nothing_fits_text(const planner::FittingLayout& leanest,
                              const memory::DeviceMemory& device);

}  // namespace perfsim::scenario
