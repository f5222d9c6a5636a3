// --timeline-ranks lists, the Kineto per-rank traces and the streamed timeline writer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "perfsim/error.hpp"
#include "results/kineto_timeline.hpp"
#include "results/rank_list.hpp"
#include "results/timeline_writer.hpp"

namespace perfsim::results {
namespace {

namespace fs = std::filesystem;

RankResult rank_with_collective(int rank) {
  RankResult result;
  result.sim_rank = rank;
  result.iteration_us = 400;
  result.timeline = {{"sm90_gemm", 7, 1, 100, KernelCategory::kGemm, ""},
                     {"all_reduce", 24, 300.0 + rank, 50, KernelCategory::kCommunication, "tp#0"},
                     {"Memcpy DtoD", 7, 120, 5, KernelCategory::kMemory, ""},
                     {"aten::mm", -1, 0, 10, KernelCategory::kOther, ""}};
  return result;
}

fs::path fresh_directory(const std::string& name) {
  const fs::path directory = fs::temp_directory_path() / name;
  fs::remove_all(directory);
  return directory;
}

TEST(TimelineRanks, ListsAndRangesAscendingWithoutRepeats) {
  EXPECT_EQ(parse_rank_list("0,8-10", 16, "--timeline-ranks"), (std::vector<int>{0, 8, 9, 10}));
  EXPECT_EQ(parse_rank_list("3,1-3", 16, "--timeline-ranks"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(parse_rank_list("all", 3, "--timeline-ranks"), (std::vector<int>{0, 1, 2}));
}

TEST(TimelineRanks, RejectsMalformedReversedAndOutOfRange) {
  for (const char* bad : {"5-2", "x", "16", "", "1,,2", "-3", "2-"})
    EXPECT_THROW(parse_rank_list(bad, 16, "--timeline-ranks"), InputError) << bad;
}

TEST(KinetoTimeline, OneFilePerWantedRankWithWhatHtaReads) {
  const fs::path directory = fresh_directory("perfsim_kineto_timeline_test");
  const TimelineRequest request{directory.string(), "kineto", {1}};
  write_timeline(request, 2, [](const RankSink& sink) {
    sink(rank_with_collective(0));  // not wanted: ignored
    sink(rank_with_collective(1));
  });
  EXPECT_FALSE(fs::exists(kineto_trace_path(directory, 0)));
  std::ifstream in(kineto_trace_path(directory, 1));
  std::stringstream text;
  text << in.rdbuf();
  // HTA finds a file's rank with the regex "rank":\s+(\d+): the space matters.
  EXPECT_NE(text.str().find("\"rank\": 1"), std::string::npos);
  const nlohmann::json trace = nlohmann::json::parse(text.str());
  EXPECT_EQ(trace.at("distributedInfo").at("world_size"), 2);
  EXPECT_EQ(trace.at("distributedInfo").at("backend"), "nccl");
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.at("ph") == "X")
      by_name[event.at("name")] = event;
  }
  // Communication gets the NCCL kernel name HTA classifies as communication.
  const nlohmann::json& collective = by_name.at("ncclDevKernel_all_reduce");
  EXPECT_EQ(collective.at("cat"), "kernel");
  EXPECT_EQ(collective.at("tid"), 24);
  EXPECT_EQ(collective.at("args").at("stream"), 24);
  EXPECT_DOUBLE_EQ(collective.at("ts").get<double>(), 301);
  EXPECT_EQ(by_name.at("Memcpy DtoD").at("cat"), "gpu_memcpy");
  EXPECT_EQ(by_name.at("sm90_gemm").at("args").at("device"), 0);
  EXPECT_EQ(by_name.at("aten::mm").at("cat"), "cpu_op");
  EXPECT_FALSE(by_name.at("aten::mm").at("args").contains("stream"));  // HTA: CPU, stream -1
  EXPECT_DOUBLE_EQ(by_name.at("ProfilerStep#0").at("dur").get<double>(), 400);
  fs::remove_all(directory);
}

TEST(ChromeTimeline, ArrowsLinkConsecutiveMembersOfEachCollective) {
  const fs::path path = fresh_directory("perfsim_chrome_stream_test.json");
  write_timeline({path.string(), "chrome", {0, 1, 2}}, 3, [](const RankSink& sink) {
    for (int rank = 0; rank < 3; ++rank)
      sink(rank_with_collective(rank));
  });
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::vector<std::pair<int, std::string>> flow_events;  // (pid, phase)
  for (const auto& event : trace.at("traceEvents")) {
    if (event.at("ph") == "s" || event.at("ph") == "f")
      flow_events.emplace_back(event.at("pid"), event.at("ph"));
  }
  EXPECT_EQ(flow_events,
            (std::vector<std::pair<int, std::string>>{{0, "s"}, {1, "f"}, {1, "s"}, {2, "f"}}));
  fs::remove(path);
}

TEST(TimelineWriter, AMissingRankFailsAndLeavesNoFile) {
  const fs::path path = fresh_directory("perfsim_chrome_missing_test.json");
  EXPECT_THROW(write_timeline({path.string(), "chrome", {0, 1}}, 2,
                              [](const RankSink& sink) { sink(rank_with_collective(0)); }),
               RuntimeFailure);
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace perfsim::results
