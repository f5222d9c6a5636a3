#include "results/run_summary.hpp"

#include <cctype>
#include <string_view>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>

namespace perfsim::results {
namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), pattern, value);
  return buffer;
}

std::string pad(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int unit = 0;
  while (bytes >= 1000 && unit < 4) {
    bytes /= 1000;
    ++unit;
  }
  return format("%.1f ", bytes) + units[unit];
}

}  // namespace

RunSummary summarize(std::span<const RankResult> results) {
  RunSummary summary;
  summary.ranks = static_cast<int>(results.size());
  double total = 0;
  for (const RankResult& result : results) {
    if (result.iteration_us > summary.iteration_us) {
      summary.iteration_us = result.iteration_us;
      summary.slowest_rank = result.sim_rank;
    }
    total += result.iteration_us;
    summary.max_gpu_busy_us = std::max(summary.max_gpu_busy_us, result.gpu_busy_us);
    summary.max_kernel_time_us = std::max(summary.max_kernel_time_us, result.kernel_time_us);
  }
  summary.mean_iteration_us = results.empty() ? 0 : total / static_cast<double>(results.size());
  return summary;
}

namespace {

// "dp/2" before "dp/10", "pp/3->4" before "pp/12->13": digit runs compare as numbers.
struct NaturalLess {
  bool operator()(const std::string& a, const std::string& b) const {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
      const bool digit_a = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
      const bool digit_b = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
      if (digit_a && digit_b) {
        std::size_t end_a = i, end_b = j;
        while (end_a < a.size() && std::isdigit(static_cast<unsigned char>(a[end_a])))
          ++end_a;
        while (end_b < b.size() && std::isdigit(static_cast<unsigned char>(b[end_b])))
          ++end_b;
        const std::string_view run_a = std::string_view(a).substr(i, end_a - i);
        const std::string_view run_b = std::string_view(b).substr(j, end_b - j);
        const auto trimmed = [](std::string_view run) {
          const auto first = run.find_first_not_of('0');
          return first == std::string_view::npos ? std::string_view() : run.substr(first);
        };
        const std::string_view number_a = trimmed(run_a), number_b = trimmed(run_b);
        if (number_a.size() != number_b.size())
          return number_a.size() < number_b.size();
        if (number_a != number_b)
          return number_a < number_b;
        i = end_a;
        j = end_b;
        continue;
      }
      if (a[i] != b[j])
        return a[i] < b[j];
      ++i;
      ++j;
    }
    return a.size() - i < b.size() - j;
  }
};

}  // namespace

std::string format_summary(std::span<const RankResult> results, const SummaryNotes& notes,
                           std::size_t max_rank_rows) {
  std::string out;
  for (const std::string& line : notes.lines)
    out += line + "\n";
  const RunSummary summary = summarize(results);
  out += "predicted iteration time: " + format("%.1f us", summary.iteration_us) + " (" +
         format("%.3f ms", summary.iteration_us / 1000.0) + "), slowest rank " +
         std::to_string(summary.slowest_rank) + ", " + std::to_string(summary.ranks) + " ranks\n\n";

  std::vector<std::size_t> rows(results.size());
  std::iota(rows.begin(), rows.end(), 0);
  if (rows.size() > max_rank_rows) {
    // Keep the slowest and the fastest ranks, in rank order.
    std::sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) {
      return results[a].iteration_us > results[b].iteration_us;
    });
    std::vector<std::size_t> kept(rows.begin(), rows.begin() + max_rank_rows / 2);
    kept.insert(kept.end(), rows.end() - (max_rank_rows - max_rank_rows / 2), rows.end());
    rows = kept;
  }
  // Rank order, whatever order the processes gathered them in.
  std::sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) {
    return results[a].sim_rank < results[b].sim_rank;
  });
  const char* headers[] = {"rank",       "iter_us", "cpu_us", "gpu_busy", "gpu_idle",
                           "emb_lookup", "gemm",    "memory", "other",    "comm"};
  for (const char* header : headers)
    out += pad(header, 11);
  out += "\n";
  for (std::size_t row : rows) {
    const RankResult& r = results[row];
    out += pad(std::to_string(r.sim_rank), 11);
    for (double value : {r.iteration_us, r.cpu_us, r.gpu_busy_us, r.gpu_idle_us}) {
      out += pad(format("%.1f", value), 11);
    }
    for (double value : r.by_category_us)
      out += pad(format("%.1f", value), 11);
    out += "\n";
  }
  if (rows.size() < results.size()) {
    out += "(" + std::to_string(results.size() - rows.size()) +
           " ranks not shown; every rank is in the results file)\n";
  }
  out +=
      "times in us; breakdown columns are summed kernel time per category over all streams "
      "(seed 001 Fig. 2); gpu_idle = iteration - time any stream is busy\n";

  std::map<std::string, GroupTraffic, NaturalLess> groups;
  for (const RankResult& result : results) {
    for (const auto& [name, traffic] : result.groups) {
      GroupTraffic& total = groups[name];
      total.collectives += traffic.collectives;
      total.bytes += traffic.bytes;
      total.time_us += traffic.time_us;
      total.exposed_us = std::max(total.exposed_us, traffic.exposed_us);
    }
  }
  // Many groups (generated layouts have one per TP/DP/PP slice): one row per kind instead,
  // the kind being the name up to its last '/' ("dp/3" -> "dp/*").
  constexpr std::size_t kMaxGroupRows = 24;
  std::map<std::string, std::pair<GroupTraffic, std::size_t>, NaturalLess> group_rows;
  for (const auto& [name, traffic] : groups) {
    std::string key = name.empty() ? "world" : name;
    if (groups.size() > kMaxGroupRows) {
      const auto slash = key.find_last_of('/');
      key = (slash == std::string::npos ? key : key.substr(0, slash)) + "/*";
    }
    auto& [total, count] = group_rows[key];
    total.collectives += traffic.collectives;
    total.bytes += traffic.bytes;
    total.time_us += traffic.time_us;
    total.exposed_us = std::max(total.exposed_us, traffic.exposed_us);
    ++count;
  }
  if (!group_rows.empty()) {
    out +=
        "\ncommunication per process group (summed over member ranks; exposed = the most any "
        "rank's compute waited for it";
    out += groups.size() > kMaxGroupRows ? "; groups of one kind summed, see the results file)\n"
                                         : "):\n";
    out += pad("group", 24) + pad("groups", 8) + pad("collectives", 13) + pad("bytes", 12) +
           pad("time_us", 13) + pad("exposed_us", 13) + "\n";
    for (const auto& [name, row] : group_rows) {
      const auto& [traffic, count] = row;
      out += pad(name, 24) + pad(std::to_string(count), 8) +
             pad(std::to_string(traffic.collectives), 13) +
             pad(human_bytes(static_cast<double>(traffic.bytes)), 12) +
             pad(format("%.1f", traffic.time_us), 13) +
             pad(format("%.1f", traffic.exposed_us), 13) + "\n";
    }
  }
  return out;
}

}  // namespace perfsim::results
