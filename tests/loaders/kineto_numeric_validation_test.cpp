// Issue 20: Kineto traces that loaded and simulated to a wrong answer with exit 0 are now
// InputErrors naming the file and the field: an empty trace (predicted 0 us), a 1e308 us
// kernel (a 63-digit iteration time), kernels whose correlation ids match no launch (silently
// taken as queued before the trace) and an all-reduce of 2^62 elements (int64 overflow).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "perfsim/error.hpp"
#include "trace_io/kineto_loader.hpp"

namespace perfsim::trace_io {
namespace {

const std::string kJob = std::string(PERFSIM_TEST_DATA_DIR) + "/kineto/job2_rank0.json";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `json` with the first `from` replaced by `to`; fails the test when `from` is absent.
std::string replaced(std::string json, const std::string& from, const std::string& to) {
  const auto at = json.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    json.replace(at, from.size(), to);
  return json;
}

void expect_rejected(const std::string& json, const std::vector<std::string>& fragments) {
  try {
    load_kineto_trace(io::InputBytes{"mutant.json", json});
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "mutant.json");
    for (const std::string& fragment : fragments)
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(KinetoNumbers, TheUnmutatedFixtureLoads) {
  Trace trace = load_kineto_trace(io::InputBytes{"job.json", read_text(kJob)});
  EXPECT_FALSE(trace.ops.empty());
}

TEST(KinetoNumbers, EmptyTraceIsAnError) {
  expect_rejected(R"({"traceEvents": []})", {"traceEvents", "nothing to simulate"});
  // Only events the loader ignores: still nothing to simulate.
  expect_rejected(R"({"traceEvents": [{"ph": "M", "name": "process_name", "args": {}}]})",
                  {"nothing to simulate"});
}

TEST(KinetoNumbers, HugeDurationIsAnError) {
  expect_rejected(replaced(read_text(kJob), "\"dur\": 200", "\"dur\": 1e308"),
                  {"volta_sgemm_128x64_nn", "field \"dur\"", "above the supported"});
  // 1e11 us is inside the bounds (on each duration and on the span of the trace) and loads.
  load_kineto_trace(
      io::InputBytes{"ok.json", replaced(read_text(kJob), "\"dur\": 200", "\"dur\": 1e11")});
}

TEST(KinetoNumbers, TimestampBeyondRangeIsAnError) {
  expect_rejected(replaced(read_text(kJob), "\"ts\": 1000030", "\"ts\": -1e300"),
                  {"field \"ts\"", "beyond the supported"});
}

TEST(KinetoNumbers, EventsSpanningMoreThanTheBoundAreAnError) {
  // Every timestamp is in range, but one event at ts 0 among ts ~1e6 + 2e12 ones would make
  // a 13-digit iteration time.
  expect_rejected(replaced(read_text(kJob), "\"ts\": 1000030", "\"ts\": 2000000000000"),
                  {"traceEvents", "events span", "above the supported"});
}

TEST(KinetoNumbers, DanglingCorrelationAboveTheFirstLaunchIsAnError) {
  // The GEMM's launch has correlation 10; its kernel now points at 777, which no call has.
  expect_rejected(replaced(read_text(kJob), "\"stream\": 7,\n\"correlation\": 10",
                           "\"stream\": 7,\n\"correlation\": 777"),
                  {"volta_sgemm_128x64_nn", "args.correlation\" 777", "matches no runtime call"});
}

TEST(KinetoNumbers, KernelQueuedBeforeTheTraceStillLoads) {
  // The fixture's first kernel (correlation 1, below every launch) was queued before profiling.
  KinetoLoad load = load_kineto_trace_with_report(io::InputBytes{"job.json", read_text(kJob)});
  EXPECT_EQ(load.report.unattributed_gpu_activities, 1);
}

TEST(KinetoNumbers, AllReduceOfTwoToTheSixtyTwoElementsIsAnError) {
  expect_rejected(replaced(read_text(kJob), "\"In msg nelems\": 1024",
                           "\"In msg nelems\": 4611686018427387904"),
                  {"record_param_comms", "In msg nelems", "exceeds"});
}

TEST(KinetoNumbers, MessageSizeThatIsNotAnIntegerIsAnErrorNotAFallback) {
  expect_rejected(replaced(read_text(kJob), "\"In msg nelems\": 1024", "\"In msg nelems\": 1024.5"),
                  {"In msg nelems", "is not an integer"});
}

TEST(KinetoNumbers, GroupSizeAndRanksOutOfRangeAreErrors) {
  expect_rejected(replaced(read_text(kJob), "\"Group size\": 2", "\"Group size\": 4294967298"),
                  {"Group size", "outside"});
  expect_rejected(replaced(read_text(kJob), "\"world_size\": 2", "\"world_size\": 4294967298"),
                  {"distributedInfo.world_size"});
}

TEST(KinetoNumbers, TensorOfOverflowingShapeIsAnError) {
  expect_rejected(replaced(read_text(kJob), "[\n64,\n64\n]", "[\n4294967296,\n4294967296\n]"),
                  {"aten::mm", "Input Dims[0]", "tensor of more than"});
}

TEST(KinetoNumbers, GroupRankOrSplitThatIsNotAnInt64IsAnError) {
  // A lone "-" once made the list reader loop, pushing zeros until a 2 GiB allocation.
  expect_rejected(replaced(read_text(kJob), "\"Process Group Ranks\": \"[0, 1]\"",
                           "\"Process Group Ranks\": \"[0, -]\""),
                  {"record_param_comms", "args.Process Group Ranks", "entry 1 of \"[0, -]\"",
                   "is not an integer"});
  expect_rejected(replaced(read_text(kJob), "\"Process Group Ranks\": \"[0, 1]\"",
                           "\"Process Group Ranks\": \"[0, 1]\", \"In split size\": "
                           "\"[99999999999999999999]\""),
                  {"args.In split size", "entry 0", "is not an integer"});
}

}  // namespace
}  // namespace perfsim::trace_io
