// Trace format detection by content and the summary `perfsim trace summary` prints, on rank 0
// of the DLRM Kineto fixture (figures from ../shared/data/traces/README.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "perfsim/error.hpp"
#include "trace_io/trace_format.hpp"
#include "trace_io/trace_summary.hpp"

namespace perfsim::trace_io {
namespace {

const std::string kArchive =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-dlrm-8xV100/dlrm_kineto.tar.gz";
const std::string kRank0 = kArchive + ":dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json";

TEST(TraceFormat, DetectsByTopLevelKey) {
  EXPECT_EQ(detect_trace_format({"k.json", R"({"schemaVersion": 1, "traceEvents": []})"}),
            TraceFormat::kKineto);
  EXPECT_EQ(detect_trace_format({"e.json", R"({"schema": "1.0.1", "pid": 1, "nodes": []})"}),
            TraceFormat::kExecutionTrace);
  try {
    detect_trace_format({"other.json", R"({"workload_graph": []})"});
    FAIL() << "accepted a file with neither key";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "other.json");
    EXPECT_NE(std::string(error.what()).find("neither \"traceEvents\""), std::string::npos);
  }
  EXPECT_THROW(detect_trace_format({"list.json", "[1, 2]"}), InputError);
  EXPECT_THROW(detect_trace_format({"broken.json", "{\"traceEv"}), InputError);
}

TEST(TraceFormat, LoadTraceDispatchesKineto) {
  ASSERT_TRUE(std::filesystem::exists(kArchive)) << "fixture missing: " << kArchive;
  Trace trace = load_trace(kRank0);
  EXPECT_EQ(trace.format, "kineto");
  EXPECT_EQ(trace.rank, 0);
}

TEST(TraceSummary, Rank0CountsByStreamCategoryAndCollective) {
  ASSERT_TRUE(std::filesystem::exists(kArchive)) << "fixture missing: " << kArchive;
  TraceSummary summary = summarize_trace(load_trace(kRank0));
  EXPECT_EQ(summary.ops, 1673);  // cpu_op 1633 + user_annotation 40
  EXPECT_EQ(summary.annotations, 40);
  EXPECT_EQ(summary.threads, 2);  // main thread and autograd thread
  std::int64_t activities = 0;
  for (const auto& [stream, tally] : summary.kernels_by_stream)
    activities += tally.count;
  EXPECT_EQ(activities, 261);  // 245 kernels + 16 memcpy
  // The NCCL stream holds the 5 SendRecv + 3 AllReduce kernels: 3999 + 1799 us (README).
  EXPECT_EQ(summary.kernels_by_stream.at(84).count, 8);
  EXPECT_EQ(summary.kernels_by_stream.at(84).measured_us, 3999 + 1799);
  EXPECT_EQ(summary.kernels_by_category.at("communication").count, 8);
  EXPECT_EQ(summary.collectives.size(), 8u);
  ASSERT_TRUE(summary.measured_step.has_value());
  EXPECT_EQ(summary.measured_step->duration_us, 14455);
  std::string text = format_trace_summary(summary);
  EXPECT_NE(text.find("c10d::allreduce_: all_reduce fp32, 1576964 bytes in"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace perfsim::trace_io
