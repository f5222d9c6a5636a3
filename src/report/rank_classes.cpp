#include "report/rank_classes.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace perfsim::report {
namespace {

std::vector<long long> class_key(const RankResult& result) {
  std::vector<long long> key;
  auto add = [&](double us) { key.push_back(std::llround(us * 10)); };
  add(result.iteration_us);
  add(result.cpu_us);
  add(result.gpu_busy_us);
  add(result.gpu_idle_us);
  for (double us : result.by_category_us)
    add(us);
  return key;
}

}  // namespace

std::vector<RankClass> rank_classes(std::span<const RankResult> results) {
  std::vector<const RankResult*> sorted;
  for (const RankResult& result : results)
    sorted.push_back(&result);
  std::sort(sorted.begin(), sorted.end(),
            [](const RankResult* a, const RankResult* b) { return a->sim_rank < b->sim_rank; });
  std::map<std::vector<long long>, std::size_t> index_of;
  std::vector<RankClass> classes;
  for (const RankResult* result : sorted) {
    const auto [it, inserted] = index_of.try_emplace(class_key(*result), classes.size());
    if (inserted)
      classes.push_back({{}, result});
    classes[it->second].ranks.push_back(result->sim_rank);
  }
  return classes;
}

std::string format_rank_list(const std::vector<int>& ranks, std::size_t max_ranges) {
  std::vector<std::pair<int, int>> ranges;
  for (int rank : ranks) {
    if (!ranges.empty() && ranges.back().second + 1 == rank)
      ranges.back().second = rank;
    else
      ranges.emplace_back(rank, rank);
  }
  std::string out;
  for (std::size_t i = 0; i < ranges.size() && i < max_ranges; ++i) {
    if (i > 0)
      out += ", ";
    const auto [first, last] = ranges[i];
    out += std::to_string(first) + (last > first ? "-" + std::to_string(last) : "");
  }
  if (ranges.size() > max_ranges)
    out += " and " + std::to_string(ranges.size() - max_ranges) + " more ranges";
  return out;
}

}  // namespace perfsim::report
