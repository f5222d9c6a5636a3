#pragma once
// The self-contained HTML report (`simulate --report run.html`, `plan --report plan.html`): the
// summary figures, then inline SVG charts (svg_chart.hpp), built from the same RunReport the
// summary screen and the JSON render: the pipeline schedule (forward and backward of each
// micro-batch per stage), where the time goes per class of identical ranks, memory per stage
// against the device, communication per group kind, and for `plan` every layout ranked with
// why it was not chosen. No script and no network reference: it opens from a file anywhere.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "perfsim/rank_result.hpp"
#include "perfsim/units.hpp"
#include "report/group_kinds.hpp"
#include "report/run_report.hpp"

namespace perfsim::report {

std::string render_run_html(const RunReport& report, std::span<const RankResult> results,
                            const GroupKindOf& kind_of);

// One layout the planner considered, and what became of it.
enum class LayoutFate {
  kChosen,       // the best
  kRanked,       // simulated, in the top K
  kSlower,       // simulated, slower than the K-th
  kPruned,       // not simulated: its lower bound could not beat the K-th
  kOutOfMemory,  // its worst stage does not fit
};
const char* layout_fate_name(LayoutFate fate);

struct PlannedLayout {
  std::string layout;  // "TP8 PP8 v3 DP1 mb1 SP sel Z0"
  LayoutFate fate = LayoutFate::kRanked;
  double iteration_us = 0;  // simulated; for kPruned its lower bound; 0 for kOutOfMemory
  double mfu = 0;           // simulated layouts only
  Bytes peak_bytes = 0;     // worst stage, closed form
};

struct PlanPage {
  std::string title;               // model, GPUs, device, topology
  std::vector<std::string> lines;  // the search in numbers
  std::optional<Bytes> capacity_bytes;
  std::vector<PlannedLayout> layouts;  // chosen and ranked first, in rank order
};

// `best` (with its representatives' results) is the chosen layout's run; null when none fits.
std::string render_plan_html(const PlanPage& plan, const RunReport* best,
                             std::span<const RankResult> best_results, const GroupKindOf& kind_of);

// Writes `html` whole or not at all (io/atomic_file.hpp).
void write_html_report(const std::string& path, const std::string& html);

}  // namespace perfsim::report
