#include "report/detail_tables.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "report/printf_string.hpp"
#include "report/rank_classes.hpp"

namespace perfsim::report {
namespace {

std::string decimal_bytes(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int unit = 0;
  while (bytes >= 1000 && unit < 5) {
    bytes /= 1000;
    ++unit;
  }
  return printf_string("%.1f %s", bytes, units[unit]);
}

}  // namespace

std::string format_rank_table(std::span<const RankResult> results, std::size_t max_rows) {
  std::vector<RankClass> classes = rank_classes(results);
  const std::size_t total = classes.size();
  if (classes.size() > max_rows) {
    std::stable_sort(classes.begin(), classes.end(), [](const RankClass& a, const RankClass& b) {
      return a.representative->iteration_us > b.representative->iteration_us;
    });
    classes.resize(max_rows);
    std::sort(classes.begin(), classes.end(), [](const RankClass& a, const RankClass& b) {
      return a.ranks.front() < b.ranks.front();
    });
  }
  std::string out = printf_string(
      "ranks with identical results (%zu classes of %zu ranks), ms; breakdown columns: kernel "
      "time per category summed over streams (seed 001 Fig. 2)\n",
      total, results.size());
  out += printf_string("%-24s %6s %11s %11s %11s %11s %10s %11s %10s %10s %11s\n", "ranks", "count",
                       "iteration", "cpu", "gpu_busy", "gpu_idle", "emb_lookup", "gemm", "memory",
                       "other", "comm");
  for (const RankClass& rank_class : classes) {
    const RankResult& r = *rank_class.representative;
    const CategoryTimes& c = r.by_category_us;
    out += printf_string(
        "%-24s %6zu %11.3f %11.3f %11.3f %11.3f %10.3f %11.3f %10.3f %10.3f %11.3f\n",
        format_rank_list(rank_class.ranks, 2).c_str(), rank_class.ranks.size(),
        r.iteration_us / 1000, r.cpu_us / 1000, r.gpu_busy_us / 1000, r.gpu_idle_us / 1000,
        c[0] / 1000, c[1] / 1000, c[2] / 1000, c[3] / 1000, c[4] / 1000);
  }
  if (classes.size() < total)
    out += printf_string("(%zu faster classes not shown; every rank is in the results file)\n",
                         total - classes.size());
  return out;
}

std::string format_group_table(std::span<const RankResult> results, const GroupKindOf& kind_of) {
  struct KindTotals {
    std::set<std::string> groups;
    std::int64_t collectives = 0;
    double bytes = 0;
    double time_us = 0;
    std::map<int, double> exposed_by_rank;
    std::map<int, double> before_start_by_rank;
  };
  std::map<std::string, KindTotals> kinds;
  for (const RankResult& result : results) {
    for (const auto& [group, traffic] : result.groups) {
      KindTotals& totals = kinds[kind_of(group)];
      totals.groups.insert(group);
      totals.collectives += traffic.collectives;
      totals.bytes += static_cast<double>(traffic.bytes);
      totals.time_us += traffic.time_us;
      totals.exposed_by_rank[result.sim_rank] += traffic.exposed_us;
      totals.before_start_by_rank[result.sim_rank] += traffic.exposed_before_start_us;
    }
  }
  const double ranks = results.empty() ? 1.0 : static_cast<double>(results.size());
  std::string out =
      "communication per group kind (time and bytes summed over ranks; exposed = time a rank's "
      "compute waited, per rank; before start = the part of it waiting for the peers), ms:\n";
  out += printf_string("%-20s %7s %12s %10s %14s %12s %12s %12s\n", "kind", "groups", "collectives",
                       "bytes", "time", "exposed_mean", "exposed_max", "before_start");
  for (const auto& [kind, totals] : kinds) {
    double exposed_sum = 0, exposed_max = 0, before_sum = 0;
    for (const auto& [rank, us] : totals.exposed_by_rank) {
      exposed_sum += us;
      exposed_max = std::max(exposed_max, us);
    }
    for (const auto& [rank, us] : totals.before_start_by_rank)
      before_sum += us;
    out += printf_string("%-20s %7zu %12lld %10s %14.3f %12.3f %12.3f %12.3f\n",
                         group_kind_label(kind).c_str(), totals.groups.size(),
                         static_cast<long long>(totals.collectives),
                         decimal_bytes(totals.bytes).c_str(), totals.time_us / 1000,
                         exposed_sum / ranks / 1000, exposed_max / 1000, before_sum / ranks / 1000);
  }
  return out;
}

std::string format_stream_table(std::span<const RankResult> results,
                                const StreamLabelOf& label_of) {
  std::map<StreamId, std::pair<double, double>> busy;  // sum, max
  for (const RankResult& result : results) {
    for (const StreamBreakdown& stream : result.streams) {
      auto& [sum, max] = busy[stream.stream];
      sum += stream.busy_us;
      max = std::max(max, stream.busy_us);
    }
  }
  const double ranks = results.empty() ? 1.0 : static_cast<double>(results.size());
  std::string out = "busy time per stream (ms; mean over ranks counts ranks without it as 0):\n";
  out += printf_string("%-28s %12s %12s\n", "stream", "mean", "max");
  for (const auto& [stream, figures] : busy)
    out += printf_string("%-28s %12.3f %12.3f\n", label_of(stream).c_str(),
                         figures.first / ranks / 1000, figures.second / 1000);
  return out;
}

}  // namespace perfsim::report
