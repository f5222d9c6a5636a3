#include "report/run_breakdown.hpp"

#include <algorithm>
#include <iterator>
#include <map>

namespace perfsim::report {
namespace {

constexpr std::size_t kCommunication = static_cast<std::size_t>(KernelCategory::kCommunication);

// Every line perfsim knows, in the order people read a Megatron breakdown in; other kinds
// follow them. A line without a label of its own is described by its group kind.
struct KnownLine {
  const char* key;
  const char* label;
  const char* detail;
};
constexpr KnownLine kKnownLines[] = {
    {"compute", "compute kernels", "kernel time of every non-communication kernel"},
    {"exposed_tp", nullptr, nullptr},
    {"exposed_cp", nullptr, nullptr},
    {"exposed_ep", nullptr, nullptr},
    {"exposed_dp", nullptr, nullptr},
    {"exposed_p2p", "exposed pipeline p2p transfer",
     "compute waiting while a stage-boundary transfer is in flight"},
    {"bubble", "pipeline bubble",
     "compute waiting for the neighbouring stage to reach its send/receive"},
    {"exposed_pp", "exposed pipeline-group collectives",
     "compute waiting at collectives across stages (gradient norm)"},
    {"exposed_mp", "exposed model-parallel collectives",
     "compute waiting at collectives over TP x PP, across stages (gradient norm)"},
    {"exposed_dopt", "exposed job-wide collectives",
     "compute waiting at collectives over the whole job (gradient norm with the distributed "
     "optimizer)"},
};
constexpr int kUnknownKindOrder = 100;
constexpr int kOtherOrder = 1000;
constexpr const char* kOtherLabel = "host, launch gaps, tail";
constexpr const char* kOtherDetail =
    "the rest: compute idle for the CPU, launch gaps, a measured start offset (Kineto input), "
    "streams busy after compute";

const KnownLine* known_line(const std::string& key) {
  for (const KnownLine& line : kKnownLines)
    if (key == line.key)
      return &line;
  return nullptr;
}

int order_of(const std::string& key) {
  if (const KnownLine* line = known_line(key))
    return static_cast<int>(line - std::begin(kKnownLines));
  return key == "other" ? kOtherOrder : kUnknownKindOrder;
}

BreakdownLine describe(const std::string& key) {
  if (key == "other")
    return {key, kOtherLabel, kOtherDetail, 0, 0};
  if (const KnownLine* line = known_line(key); line && line->label)
    return {key, line->label, line->detail, 0, 0};
  const std::string kind = key.substr(std::string("exposed_").size());
  return {key, "exposed " + group_kind_label(kind) + " communication",
          "compute waiting for " + group_kind_label(kind) + " collectives", 0, 0};
}

}  // namespace

std::map<std::string, double> rank_breakdown(const RankResult& result, const GroupKindOf& kind_of) {
  std::map<std::string, double> lines;
  double compute = 0;
  for (std::size_t c = 0; c < kCategoryCount; ++c)
    if (c != kCommunication)
      compute += result.by_category_us[c];
  lines["compute"] = compute;
  double accounted = compute;
  for (const auto& [group, traffic] : result.groups) {
    const std::string kind = kind_of(group);
    if (kind == "p2p") {
      lines["bubble"] += traffic.exposed_before_start_us;
      lines["exposed_p2p"] += traffic.exposed_us - traffic.exposed_before_start_us;
    } else {
      lines["exposed_" + kind] += traffic.exposed_us;
    }
    accounted += traffic.exposed_us;
  }
  lines["other"] = result.iteration_us - accounted;
  return lines;
}

RunReport build_run_report(std::span<const RankResult> results, const GroupKindOf& kind_of) {
  RunReport report;
  report.ranks = static_cast<int>(results.size());
  const RankResult* slowest = nullptr;
  double iteration_sum = 0;
  for (const RankResult& result : results) {
    // Ties go to the lowest rank, whatever order the processes gathered them in.
    if (!slowest || result.iteration_us > slowest->iteration_us ||
        (result.iteration_us == slowest->iteration_us && result.sim_rank < slowest->sim_rank))
      slowest = &result;
    iteration_sum += result.iteration_us;
    report.simulated_ops += result.ops;
  }
  if (!slowest)
    return report;
  report.iteration_us = slowest->iteration_us;
  report.slowest_rank = slowest->sim_rank;
  report.mean_iteration_us = iteration_sum / static_cast<double>(results.size());

  std::map<std::string, double> mean;
  for (const RankResult& result : results)
    for (const auto& [key, us] : rank_breakdown(result, kind_of))
      mean[key] += us / static_cast<double>(results.size());
  const std::map<std::string, double> worst = rank_breakdown(*slowest, kind_of);
  for (const auto& [key, us] : mean) {
    BreakdownLine line = describe(key);
    line.mean_us = us;
    const auto found = worst.find(key);
    line.slowest_rank_us = found == worst.end() ? 0 : found->second;
    report.breakdown.push_back(std::move(line));
  }
  std::stable_sort(report.breakdown.begin(), report.breakdown.end(),
                   [](const BreakdownLine& a, const BreakdownLine& b) {
                     return order_of(a.key) < order_of(b.key);
                   });
  return report;
}

}  // namespace perfsim::report
