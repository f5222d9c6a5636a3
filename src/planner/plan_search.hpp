#pragma once
// The planner's search: simulate the layouts that fit, best first by a lower bound, and stop
// when no remaining layout can enter the top K (branch and bound). With a valid lower bound
// (a time no simulation of the layout can beat) the top K is exactly the one simulating every
// layout would give; without one (bound 0) every layout is simulated.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "planner/layout_enumerator.hpp"

namespace perfsim::planner {

struct LayoutScore {
  generators::llm::ParallelConfig parallel;
  double iteration_us = 0;
  double mfu = 0;
  Bytes peak_bytes = 0;      // worst pipeline stage, closed form
  Bytes headroom_bytes = 0;  // capacity - peak
  // The group kind compute waited for longest (mean per rank), e.g. "tensor parallel".
  std::string dominant_comm;
  double dominant_exposed_us = 0;
};

struct SearchProgress {
  std::size_t candidates = 0;
  std::size_t bounded = 0;  // lower bounds computed so far (the first phase)
  std::size_t simulated = 0;
  std::size_t pruned = 0;
  const LayoutScore* latest = nullptr;  // the layout just simulated
  double latest_bound_us = 0;           // and its lower bound
  double best_us = 0;                   // 0 before the first
};

struct SearchCallbacks {
  std::function<double(const FittingLayout&)> lower_bound_us;  // may be empty: no pruning
  std::function<LayoutScore(const FittingLayout&)> simulate;   // required
  std::function<void(const SearchProgress&)> progress;         // may be empty
};

struct SearchResult {
  // Ascending iteration time, at most top_k; layouts that differ only in their ZeRO stage
  // appear once, with the faster stage (equally fast: the one with more headroom).
  std::vector<LayoutScore> top;
  std::size_t candidates = 0;
  std::size_t simulated = 0;
  std::size_t pruned = 0;  // never simulated: their bound could not beat the K-th best
};

// `jobs` threads simulate at once (callbacks.simulate must then be safe to call concurrently;
// progress is called under a lock). The top K does not depend on `jobs`; with jobs > 1 a few
// more layouts may be simulated than with one (the bound is checked when a job starts).
SearchResult search_top_layouts(const std::vector<FittingLayout>& candidates, std::size_t top_k,
                                const SearchCallbacks& callbacks, int jobs = 1);

// The kind with the largest value ("" and 0 when empty).
std::pair<std::string, double> dominant_entry(const std::vector<std::pair<std::string, double>>&);

// One table: rank, layout, iteration time, MFU, memory peak and headroom, dominant exposed
// communication.
std::string format_plan_table(const std::vector<LayoutScore>& layouts);

// "TP8 PP8 v3 DP1 mb1 SP sel Z1": the table's compact layout name; MoE layouts add the switches
// the planner turned on for them: "flex-deepep" / "flex-hybridep" (token dispatcher), "a2a-ovl"
// (moe_a2a_overlap), "wgrad-delay" (delay_wgrad_compute), "shared-ovl"
// (moe_shared_expert_overlap).
std::string short_layout_name(const generators::llm::ParallelConfig& parallel);

}  // namespace perfsim::planner
