// Malformed Kineto inputs (tests/data/malformed/kineto_*.json): each one is rejected with an
// InputError naming the file, the event and the field. Inputs that look odd but are allowed
// (no ProfilerStep, a kernel whose launch is not in the trace) load.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perfsim/error.hpp"
#include "trace_io/kineto_loader.hpp"

namespace perfsim::trace_io {
namespace {

struct MalformedCase {
  std::string file;
  std::vector<std::string> fragments;  // each must appear in what()
};

const std::string kDir = std::string(PERFSIM_TEST_DATA_DIR) + "/malformed/";

class MalformedKineto : public testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedKineto, IsRejectedWithFileEventAndField) {
  const MalformedCase& test = GetParam();
  const std::string path = kDir + test.file;
  try {
    load_kineto_trace_file(path);
    FAIL() << path << " was accepted";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_EQ(error.file(), path);
    for (const std::string& fragment : test.fragments)
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "message \"" << message << "\" lacks \"" << fragment << "\"";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Corpus, MalformedKineto,
    testing::Values(
        MalformedCase{"kineto_truncated.json", {"invalid JSON (truncated or malformed)"}},
        MalformedCase{"kineto_no_trace_events.json",
                      {"traceEvents: is missing: not a Kineto trace"}},
        MalformedCase{"kineto_trace_events_not_array.json", {"traceEvents: is not an array"}},
        MalformedCase{"kineto_missing_dur.json",
                      {"traceEvents[1] (\"aten::mm\")", "field \"dur\" is missing"}},
        MalformedCase{"kineto_negative_dur.json",
                      {"traceEvents[1] (\"cudaLaunchKernel\")", "field \"dur\" is negative (-5)"}},
        MalformedCase{"kineto_ts_not_number.json",
                      {"traceEvents[0] (\"ProfilerStep#3\")", "field \"ts\" is not a number"}},
        MalformedCase{
            "kineto_kernel_without_correlation.json",
            {"traceEvents[2] (\"relu_kernel\")", "field \"args.correlation\" is missing"}},
        MalformedCase{"kineto_kernel_without_stream.json",
                      {"traceEvents[2] (\"relu_kernel\")", "field \"args.stream\" is missing"}},
        MalformedCase{"kineto_duplicate_correlation.json",
                      {"traceEvents[2] (\"cudaMemcpyAsync\")", "args.correlation\" 7",
                       "already used by the runtime call traceEvents[1]"}},
        MalformedCase{"kineto_bad_rank.json",
                      {"distributedInfo", "rank 9 is not within world_size 8"}},
        MalformedCase{"kineto_missing_name.json", {"traceEvents[0]", "field \"name\" is missing"}}),
    [](const testing::TestParamInfo<MalformedCase>& info) {
      std::string name = info.param.file.substr(0, info.param.file.find('.'));
      return name;
    });

io::InputBytes inline_trace(std::string json) {
  return io::InputBytes{"<inline>", std::move(json)};
}

TEST(KinetoAllowed, NoProfilerStepLeavesMeasuredStepEmpty) {
  Trace trace = load_kineto_trace(inline_trace(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "tid": 1, "ts": 100, "dur": 20}]})"));
  EXPECT_FALSE(trace.measured_step.has_value());
  ASSERT_EQ(trace.ops.size(), 1u);
  EXPECT_EQ(trace.rank, 0);
  EXPECT_EQ(trace.world_size, 1);
}

TEST(KinetoAllowed, KernelWithoutItsLaunchIsKeptUnattributed) {
  KinetoLoad load = load_kineto_trace_with_report(inline_trace(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "tid": 1, "ts": 100, "dur": 20},
    {"ph": "X", "cat": "kernel", "name": "relu_kernel", "tid": 7, "ts": 90, "dur": 3,
     "args": {"correlation": 3, "stream": 7}}]})"));
  EXPECT_EQ(load.report.unattributed_gpu_activities, 1);
  ASSERT_EQ(load.trace.unattributed_kernels.size(), 1u);
  EXPECT_EQ(load.trace.unattributed_kernels[0].name, "relu_kernel");
  EXPECT_TRUE(load.trace.unattributed_kernels[0].launch_api.empty());
  EXPECT_TRUE(load.trace.ops[0].kernels.empty());
}

}  // namespace
}  // namespace perfsim::trace_io
