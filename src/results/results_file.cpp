#include "results/results_file.hpp"

#include <chrono>
#include <vector>

#include "hdf5/column_table.hpp"
#include "io/file_lock.hpp"

namespace perfsim::results {
namespace {

constexpr const char* kCategoryColumns[kCategoryCount] = {
    "embedding_lookup_us", "gemm_us", "memory_us", "other_us", "communication_us"};

// Another writer holds the lock only while it copies the file and adds one run (milliseconds
// to seconds); a wait this long means it is stuck, not busy.
constexpr std::chrono::milliseconds kResultsLockTimeout{std::chrono::minutes(5)};

}  // namespace

void write_run_results(const std::string& file_path, const std::string& run_name,
                       std::span<const RankResult> results,
                       const std::map<std::string, std::string>& run_attributes) {
  const std::string base = "/runs/" + run_name;

  h5::ColumnTable ranks;
  std::vector<std::int64_t> rank_ids, ops, kernels;
  std::vector<double> iteration, cpu, kernel_time, busy, idle;
  std::vector<std::vector<double>> categories(kCategoryCount);
  for (const RankResult& result : results) {
    rank_ids.push_back(result.sim_rank);
    iteration.push_back(result.iteration_us);
    cpu.push_back(result.cpu_us);
    kernel_time.push_back(result.kernel_time_us);
    busy.push_back(result.gpu_busy_us);
    idle.push_back(result.gpu_idle_us);
    ops.push_back(static_cast<std::int64_t>(result.ops));
    kernels.push_back(static_cast<std::int64_t>(result.kernels));
    for (std::size_t c = 0; c < kCategoryCount; ++c) {
      categories[c].push_back(result.by_category_us[c]);
    }
  }
  ranks.add("rank", rank_ids);
  ranks.add("iteration_us", iteration, "us");
  ranks.add("cpu_us", cpu, "us");
  ranks.add("kernel_time_us", kernel_time, "us");
  ranks.add("gpu_busy_us", busy, "us");
  ranks.add("gpu_idle_us", idle, "us");
  for (std::size_t c = 0; c < kCategoryCount; ++c) {
    ranks.add(kCategoryColumns[c], categories[c], "us");
  }
  ranks.add("ops", ops);
  ranks.add("kernels", kernels);
  ranks.attributes = run_attributes;
  // Built whole before the lock is taken, so the lock is held for the file work alone.

  h5::ColumnTable streams;
  std::vector<std::int64_t> stream_rank, stream_id;
  std::vector<double> stream_busy;
  std::vector<std::vector<double>> stream_categories(kCategoryCount);
  for (const RankResult& result : results) {
    for (const StreamBreakdown& stream : result.streams) {
      stream_rank.push_back(result.sim_rank);
      stream_id.push_back(stream.stream);
      stream_busy.push_back(stream.busy_us);
      for (std::size_t c = 0; c < kCategoryCount; ++c) {
        stream_categories[c].push_back(stream.by_category_us[c]);
      }
    }
  }
  streams.add("rank", stream_rank);
  streams.add("stream", stream_id);
  streams.add("busy_us", stream_busy, "us");
  for (std::size_t c = 0; c < kCategoryCount; ++c) {
    streams.add(kCategoryColumns[c], stream_categories[c], "us");
  }

  h5::ColumnTable groups;
  std::vector<std::int64_t> group_rank, collectives, bytes;
  std::vector<std::string> names;
  std::vector<double> time, exposed, exposed_before_start;
  for (const RankResult& result : results) {
    for (const auto& [name, traffic] : result.groups) {
      group_rank.push_back(result.sim_rank);
      names.push_back(name.empty() ? "world" : name);
      collectives.push_back(traffic.collectives);
      bytes.push_back(traffic.bytes);
      time.push_back(traffic.time_us);
      exposed.push_back(traffic.exposed_us);
      exposed_before_start.push_back(traffic.exposed_before_start_us);
    }
  }
  groups.add("rank", group_rank);
  groups.add("group", names);
  groups.add("collectives", collectives);
  groups.add("bytes", bytes, "bytes");
  groups.add("time_us", time, "us");
  groups.add("exposed_us", exposed, "us");
  groups.add("exposed_before_start_us", exposed_before_start, "us");

  // Runs that share one results file append one after another: each reads the file as the
  // previous writer left it, adds its run, and renames the new file into place.
  const io::FileLock lock(file_path, kResultsLockTimeout);
  h5::OutputFile output(file_path, /*truncate_file=*/false);
  output.write_table(base + "/ranks", ranks);
  output.write_table(base + "/streams", streams);
  output.write_table(base + "/groups", groups);
  output.commit();
}

}  // namespace perfsim::results
