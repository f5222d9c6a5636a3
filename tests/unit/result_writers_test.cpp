// The results HDF5 file and the Perfetto timeline, read back the way users read them.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hdf5/column_table.hpp"
#include "results/perfetto_timeline.hpp"
#include "results/results_file.hpp"

namespace perfsim::results {
namespace {

std::vector<RankResult> two_ranks() {
  std::vector<RankResult> results(2);
  for (int rank = 0; rank < 2; ++rank) {
    RankResult& r = results[static_cast<std::size_t>(rank)];
    r.sim_rank = rank;
    r.iteration_us = 360 + rank;
    r.cpu_us = 10;
    r.gpu_busy_us = 150;
    r.gpu_idle_us = r.iteration_us - 150;
    r.by_category_us = {1, 2, 3, 4, 50};
    r.streams = {{7, 100, {1, 2, 3, 4, 0}}, {24, 50, {0, 0, 0, 0, 50}}};
    r.groups[""] = {1, 4096, 50, 25.0 * rank};
    r.timeline = {{"compute", 7, 0, 100, KernelCategory::kGemm, ""},
                  {"nccl", 24, 300, 50, KernelCategory::kCommunication, "world#0"},
                  {"op", -1, 0, 10, KernelCategory::kOther, ""}};
  }
  return results;
}

TEST(ResultWriters, ResultsFileHoldsRankStreamAndGroupTables) {
  const std::string path = std::filesystem::temp_directory_path() / "perfsim_results_test.h5";
  std::filesystem::remove(path);
  auto results = two_ranks();
  write_run_results(path, "run-a", results, {{"inputs", "x.json"}});
  write_run_results(path, "run-b", results, {});  // a second run beside the first
  h5::ColumnTable ranks = h5::read_table(path, "/runs/run-a/ranks");
  EXPECT_EQ(ranks.integers("rank"), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(ranks.doubles("iteration_us"), (std::vector<double>{360, 361}));
  EXPECT_EQ(ranks.doubles("communication_us"), (std::vector<double>{50, 50}));
  EXPECT_EQ(ranks.units.at("iteration_us"), "us");
  EXPECT_EQ(ranks.attributes.at("inputs"), "x.json");
  h5::ColumnTable streams = h5::read_table(path, "/runs/run-a/streams");
  EXPECT_EQ(streams.integers("stream"), (std::vector<std::int64_t>{7, 24, 7, 24}));
  h5::ColumnTable groups = h5::read_table(path, "/runs/run-a/groups");
  EXPECT_EQ(groups.strings("group"), (std::vector<std::string>{"world", "world"}));
  EXPECT_EQ(groups.doubles("exposed_us"), (std::vector<double>{0, 25}));
  // The part of the exposed time before the collectives started (none set here).
  EXPECT_EQ(groups.doubles("exposed_before_start_us"), (std::vector<double>{0, 0}));
  EXPECT_EQ(h5::list_groups(path, "/runs"), (std::vector<std::string>{"run-a", "run-b"}));
  std::filesystem::remove(path);
}

TEST(ResultWriters, TimelineIsChromeTraceJsonWithFlowsAcrossRanks) {
  const std::string path = std::filesystem::temp_directory_path() / "perfsim_timeline_test.json";
  write_perfetto_timeline(path, two_ranks());
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  int slices = 0, flow_starts = 0, flow_ends = 0;
  for (const auto& event : trace.at("traceEvents")) {
    const std::string phase = event.at("ph");
    if (phase == "X")
      ++slices;
    if (phase == "s")
      ++flow_starts;
    if (phase == "f")
      ++flow_ends;
  }
  EXPECT_EQ(slices, 6);
  EXPECT_EQ(flow_starts, 1);  // one collective, linked from rank 0 ...
  EXPECT_EQ(flow_ends, 1);    // ... to rank 1
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace perfsim::results
