#pragma once
// Ranks with identical results, collapsed: a generated layout of 2,048 ranks has a handful of
// distinct behaviours (one per pipeline stage, say), so reports print one row per class.
#include <span>
#include <string>
#include <vector>

#include "perfsim/rank_result.hpp"

namespace perfsim::report {

struct RankClass {
  std::vector<int> ranks;            // ascending
  const RankResult* representative;  // the lowest rank of the class
};

// Ranks whose iteration, CPU, GPU busy/idle and per-category times agree to 0.1 us (what the
// tables print) form one class; classes in the order of their lowest rank.
std::vector<RankClass> rank_classes(std::span<const RankResult> results);

// Ascending ranks as ranges: "32-39, 48-54, 56"; past `max_ranges` ranges "..., 60-63 and 12
// more ranges".
std::string format_rank_list(const std::vector<int>& ranks, std::size_t max_ranges = 4);

}  // namespace perfsim::report
