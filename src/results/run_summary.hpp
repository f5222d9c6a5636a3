#pragma once
// The figures perfsim reports for one simulated iteration, derived from every rank's result:
// what the summary table prints and the results file stores.
#include <span>
#include <string>
#include <vector>

#include "perfsim/rank_result.hpp"

namespace perfsim::results {

struct RunSummary {
  int ranks = 0;
  TimestampUs iteration_us = 0;  // max over ranks
  int slowest_rank = 0;
  DurationUs mean_iteration_us = 0;
  DurationUs max_gpu_busy_us = 0;
  DurationUs max_kernel_time_us = 0;
};

RunSummary summarize(std::span<const RankResult> results);

// Context lines printed above the table (inputs, sources, caveats such as "communication not
// synchronized across ranks").
struct SummaryNotes {
  std::vector<std::string> lines;
};

// A human-readable report: per-rank iteration, CPU, GPU busy/idle and the seed 001 Fig. 2
// breakdown (embedding lookup, GEMM, memory, other, communication, idle), then per-group
// communication. At most `max_rank_rows` rank rows (the slowest and fastest kept).
std::string format_summary(std::span<const RankResult> results, const SummaryNotes& notes,
                           std::size_t max_rank_rows = 16);

}  // namespace perfsim::results
