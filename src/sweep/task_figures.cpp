#include "sweep/task_figures.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "hdf5/column_table.hpp"
#include "perfsim/error.hpp"

namespace perfsim::sweep {
namespace {

constexpr const char* kMeanColumns[] = {"gpu_busy_us",     "gpu_idle_us", "embedding_lookup_us",
                                        "gemm_us",         "memory_us",   "other_us",
                                        "communication_us"};

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values)
    sum += value;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

// "tp/3" -> "tp", "p2p:0->2" -> "p2p", "world" -> "world"; anything but [a-z0-9_] becomes
// '_' so the kind is a clean column name.
std::string group_kind(const std::string& group) {
  std::string kind = group.substr(0, group.find_first_of("/:"));
  for (char& c : kind) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      c = '_';
  }
  return kind.empty() ? "world" : kind;
}

}  // namespace

TaskFigures read_task_figures(const std::filesystem::path& results_file,
                              const std::string& run_name) {
  const std::string base = "/runs/" + run_name;
  const h5::ColumnTable ranks = h5::read_table(results_file.string(), base + "/ranks");
  const auto& rank_ids = ranks.integers("rank");
  const auto& iterations = ranks.doubles("iteration_us");
  if (iterations.empty())
    throw InputError(results_file.string(), base + "/ranks", "no ranks in the results");

  TaskFigures figures;
  const auto slowest = std::max_element(iterations.begin(), iterations.end());
  figures.emplace_back("iteration_us", *slowest);
  figures.emplace_back("mean_iteration_us", mean(iterations));
  figures.emplace_back("slowest_rank", static_cast<double>(rank_ids[slowest - iterations.begin()]));
  for (const char* column : kMeanColumns)
    figures.emplace_back(column, mean(ranks.doubles(column)));

  const h5::ColumnTable groups = h5::read_table(results_file.string(), base + "/groups");
  std::map<std::int64_t, double> comm_time_per_rank, exposed_per_rank;
  std::map<std::string, std::map<std::int64_t, double>> exposed_per_kind_rank;
  const auto& group_ranks = groups.integers("rank");
  const auto& group_names = groups.strings("group");
  const auto& group_time = groups.doubles("time_us");
  const auto& group_exposed = groups.doubles("exposed_us");
  for (std::size_t row = 0; row < group_ranks.size(); ++row) {
    comm_time_per_rank[group_ranks[row]] += group_time[row];
    exposed_per_rank[group_ranks[row]] += group_exposed[row];
    exposed_per_kind_rank[group_kind(group_names[row])][group_ranks[row]] += group_exposed[row];
  }
  auto max_value = [](const std::map<std::int64_t, double>& per_rank) {
    double best = 0;
    for (const auto& [rank, value] : per_rank)
      best = std::max(best, value);
    return best;
  };
  figures.emplace_back("comm_time_us", max_value(comm_time_per_rank));
  figures.emplace_back("exposed_comm_us", max_value(exposed_per_rank));

  const h5::ColumnTable streams = h5::read_table(results_file.string(), base + "/streams");
  std::map<std::int64_t, std::vector<double>> busy_per_stream;
  const auto& stream_ids = streams.integers("stream");
  const auto& stream_busy = streams.doubles("busy_us");
  for (std::size_t row = 0; row < stream_ids.size(); ++row)
    busy_per_stream[stream_ids[row]].push_back(stream_busy[row]);
  for (const auto& [stream, busy] : busy_per_stream) {
    // A stream a rank never used has no row for that rank: the mean is over all ranks.
    double sum = 0;
    for (double value : busy)
      sum += value;
    figures.emplace_back("stream" + std::to_string(stream) + "_busy_us",
                         sum / static_cast<double>(iterations.size()));
  }
  for (const auto& [kind, per_rank] : exposed_per_kind_rank)
    figures.emplace_back("exposed_" + kind + "_us", max_value(per_rank));
  return figures;
}

}  // namespace perfsim::sweep
