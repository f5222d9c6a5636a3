#include "planner/plan_search.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "perfsim/error.hpp"

namespace perfsim::planner {

namespace {

// Shared by the worker threads; every member is guarded by `lock`.
struct SearchState {
  std::mutex lock;
  std::size_t next = 0;  // into the bound order
  bool stopped = false;
  std::exception_ptr failure;
  SearchResult result;
};

bool by_time(const LayoutScore& a, const LayoutScore& b) {
  return a.iteration_us < b.iteration_us;
}

// Layouts that differ only in the ZeRO stage: ZeRO trades memory for communication, so the
// table keeps the better of the two (faster; equally fast: more headroom).
bool same_but_zero(const generators::llm::ParallelConfig& a,
                   const generators::llm::ParallelConfig& b) {
  return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.ep == b.ep && a.etp == b.etp &&
         a.virtual_stages == b.virtual_stages && a.micro_batch == b.micro_batch &&
         a.global_batch == b.global_batch && a.sequence_parallel == b.sequence_parallel &&
         a.recompute == b.recompute;
}

bool better(const LayoutScore& a, const LayoutScore& b) {
  if (a.iteration_us != b.iteration_us)
    return a.iteration_us < b.iteration_us;
  return a.headroom_bytes > b.headroom_bytes;
}

// Inserts `score` into `top` (ascending time, at most top_k when top_k > 0), one entry per
// layout up to its ZeRO stage.
void insert_score(std::vector<LayoutScore>& top, const LayoutScore& score, std::size_t top_k) {
  auto sibling = std::find_if(top.begin(), top.end(), [&](const LayoutScore& entry) {
    return same_but_zero(entry.parallel, score.parallel);
  });
  if (sibling != top.end()) {
    if (!better(score, *sibling))
      return;
    top.erase(sibling);
  }
  top.insert(std::upper_bound(top.begin(), top.end(), score, by_time), score);
  if (top_k > 0 && top.size() > top_k)
    top.pop_back();
}

void search_worker(const std::vector<FittingLayout>& candidates,
                   const std::vector<std::size_t>& order, const std::vector<double>& bounds,
                   std::size_t top_k, const SearchCallbacks& callbacks, SearchState& state) {
  while (true) {
    std::size_t index = 0;
    {
      std::lock_guard guard(state.lock);
      if (state.stopped || state.next == order.size())
        return;
      index = order[state.next];
      const auto& top = state.result.top;
      if (top_k > 0 && top.size() >= top_k && bounds[index] >= top.back().iteration_us) {
        // Sorted by bound: no later layout can beat the K-th best either.
        state.result.pruned = order.size() - state.next;
        state.next = order.size();
        return;
      }
      ++state.next;
    }
    LayoutScore score;
    try {
      score = callbacks.simulate(candidates[index]);
    } catch (...) {
      std::lock_guard guard(state.lock);
      if (!state.failure)
        state.failure = std::current_exception();
      state.stopped = true;
      return;
    }
    std::lock_guard guard(state.lock);
    auto& top = state.result.top;
    ++state.result.simulated;
    insert_score(top, score, top_k);
    if (callbacks.progress) {
      SearchProgress progress;
      progress.candidates = candidates.size();
      progress.bounded = candidates.size();
      progress.simulated = state.result.simulated;
      progress.latest = &score;
      progress.latest_bound_us = bounds[index];
      progress.best_us = top.front().iteration_us;
      callbacks.progress(progress);
    }
  }
}

}  // namespace

SearchResult search_top_layouts(const std::vector<FittingLayout>& candidates, std::size_t top_k,
                                const SearchCallbacks& callbacks, int jobs) {
  if (!callbacks.simulate)
    throw RuntimeFailure("search_top_layouts: no simulate callback");
  std::vector<double> bounds(candidates.size(), 0.0);
  if (callbacks.lower_bound_us) {
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      bounds[i] = callbacks.lower_bound_us(candidates[i]);
      if (callbacks.progress) {
        SearchProgress progress;
        progress.candidates = candidates.size();
        progress.bounded = i + 1;
        callbacks.progress(progress);
      }
    }
  }
  std::vector<std::size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return bounds[a] < bounds[b]; });

  SearchState state;
  state.result.candidates = candidates.size();
  const int threads = std::max(1, jobs);
  if (threads == 1) {
    search_worker(candidates, order, bounds, top_k, callbacks, state);
  } else {
    std::vector<std::thread> workers;
    for (int i = 0; i < threads; ++i)
      workers.emplace_back(
          [&] { search_worker(candidates, order, bounds, top_k, callbacks, state); });
    for (std::thread& worker : workers)
      worker.join();
  }
  if (state.failure)
    std::rethrow_exception(state.failure);
  if (callbacks.progress && state.result.pruned > 0) {
    SearchProgress progress;
    progress.candidates = candidates.size();
    progress.bounded = candidates.size();
    progress.simulated = state.result.simulated;
    progress.pruned = state.result.pruned;
    progress.best_us = state.result.top.empty() ? 0 : state.result.top.front().iteration_us;
    callbacks.progress(progress);
  }
  return std::move(state.result);
}

std::pair<std::string, double> dominant_entry(
    const std::vector<std::pair<std::string, double>>& entries) {
  std::pair<std::string, double> best{"", 0.0};
  for (const auto& entry : entries) {
    if (entry.second > best.second)
      best = entry;
  }
  return best;
}

std::string short_layout_name(const generators::llm::ParallelConfig& parallel) {
  std::string name = "TP" + std::to_string(parallel.tp) +
                     (parallel.cp > 1 ? " CP" + std::to_string(parallel.cp) : std::string()) +
                     " PP" + std::to_string(parallel.pp);
  if (parallel.first_stage_layers > 0 || parallel.last_stage_layers > 0)
    name += " (" + std::to_string(parallel.first_stage_layers) + "/../" +
            std::to_string(parallel.last_stage_layers) + ")";
  if (parallel.virtual_stages > 1)
    name += " v" + std::to_string(parallel.virtual_stages);
  name += " DP" + std::to_string(parallel.dp) +
          (parallel.ep > 1 ? " EP" + std::to_string(parallel.ep) : std::string()) +
          (parallel.expert_tp() != parallel.tp ? " ETP" + std::to_string(parallel.etp)
                                               : std::string()) +
          " mb" + std::to_string(parallel.micro_batch);
  if (parallel.sequence_parallel)
    name += " SP";
  switch (parallel.recompute) {
    case generators::llm::Recompute::kNone:
      break;
    case generators::llm::Recompute::kSelective:
      name += " sel";
      if (!parallel.recompute_modules.is_default())
        name += "(" + generators::llm::recompute_modules_name(parallel.recompute_modules) + ")";
      break;
    case generators::llm::Recompute::kFull:
      name += " full";
      break;
  }
  if (parallel.zero_stage > 0)
    name += " Z" + std::to_string(parallel.zero_stage);
  if (parallel.fp8_param_gather)
    name += " fp8w";  // FP8 primary weights
  // The MoE switches the planner turns on per layout (layout_enumerator.hpp).
  if (parallel.moe_flex())
    name +=
        " flex-" + std::string(generators::llm::moe_flex_backend_name(parallel.moe_flex_backend));
  if (parallel.moe_a2a_overlap)
    name += " a2a-ovl";
  if (parallel.delay_wgrad_compute)
    name += " wgrad-delay";
  if (parallel.moe_shared_expert_overlap)
    name += " shared-ovl";
  if (parallel.order != generators::llm::default_rank_order())
    name += " " + generators::llm::rank_order_name(parallel.order);
  return name;
}

std::string format_plan_table(const std::vector<LayoutScore>& layouts) {
  std::string out;
  char line[320];
  // 30 characters, wider when a name (MoE switches, rank order) is longer.
  int name_width = 30;
  for (const LayoutScore& layout : layouts)
    name_width = std::max(name_width, static_cast<int>(short_layout_name(layout.parallel).size()));
  std::snprintf(line, sizeof line, "%4s  %-*s %12s %6s %10s %10s  %s\n", "rank", name_width,
                "layout", "iteration_ms", "MFU_%", "peak_GiB", "spare_GiB",
                "dominant exposed communication (ms per rank)");
  out += line;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    const LayoutScore& layout = layouts[i];
    const std::string dominant =
        layout.dominant_comm.empty()
            ? std::string("none")
            : layout.dominant_comm + " " +
                  std::to_string(static_cast<long long>(layout.dominant_exposed_us / 1000 + 0.5));
    std::snprintf(line, sizeof line, "%4zu  %-*s %12.1f %6.1f %10.2f %10.2f  %s\n", i + 1,
                  name_width, short_layout_name(layout.parallel).c_str(), layout.iteration_us / 1e3,
                  100 * layout.mfu, static_cast<double>(layout.peak_bytes) / kGiB,
                  static_cast<double>(layout.headroom_bytes) / kGiB, dominant.c_str());
    out += line;
  }
  return out;
}

}  // namespace perfsim::planner
