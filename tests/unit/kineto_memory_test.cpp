// `perfsim memory` on a Kineto trace reads the allocator's own [memory] events: peak allocated
// and reserved as recorded, checked by replaying the byte deltas.
#include <gtest/gtest.h>

#include <string>

#include "io/input_file.hpp"
#include "memory/kineto_memory.hpp"
#include "perfsim/error.hpp"
#include "trace_io/kineto_memory_events.hpp"

namespace perfsim::memory {
namespace {

const std::string kData = std::string(PERFSIM_TEST_DATA_DIR) + "/kineto/";

KinetoMemoryReport report_of(const io::InputBytes& input) {
  DeviceMemory device;
  device.capacity_bytes = Bytes{32} << 30;
  device.context_bytes = 0;
  return kineto_memory_report(input.source, trace_io::read_kineto_memory_events(input), device);
}

// tests/data/kineto/make_traces.py: allocated 1 -> 3 -> 1 MiB, reserved 2 -> 4 -> 4 MiB on
// cuda:0; one CPU event of 9 GiB that must not count.
TEST(KinetoMemory, PeaksComeFromTheAllocatorEventsOfTheGpu) {
  const KinetoMemoryReport report = report_of(io::read_input(kData + "job2_rank0.json"));
  EXPECT_EQ(report.device_id, 0);
  EXPECT_EQ(report.events, 3u);
  EXPECT_EQ(report.peak_allocated_bytes, Bytes{3} << 20);
  EXPECT_EQ(report.peak_reserved_bytes, Bytes{4} << 20);
  EXPECT_EQ(report.replayed_peak_allocated_bytes, report.peak_allocated_bytes);
  EXPECT_EQ(report.inconsistent_events, 0u);
  EXPECT_EQ(report.allocated_at_end_bytes, Bytes{1} << 20);
  EXPECT_TRUE(report.verdict.known);
  EXPECT_TRUE(report.verdict.fits);
}

// The issue's trace: 6.6 GB allocated and 12.8 GB reserved must not "fit" a 12 GB part.
TEST(KinetoMemory, ALargeReservedPeakDoesNotFitASmallDevice) {
  const std::string json =
      R"({"traceEvents":[)"
      R"({"ph":"i","name":"[memory]","ts":1,"args":{"Device Type":1,"Device Id":0,"Bytes":6600000000,"Total Allocated":6600000000,"Total Reserved":12800000000}}]})";
  DeviceMemory device;
  device.capacity_bytes = 12'000'000'000;
  const io::InputBytes input{"inline.json", json};
  const KinetoMemoryReport report =
      kineto_memory_report(input.source, trace_io::read_kineto_memory_events(input), device);
  EXPECT_EQ(report.peak_allocated_bytes, 6'600'000'000);
  EXPECT_EQ(report.peak_reserved_bytes, 12'800'000'000);
  EXPECT_FALSE(report.verdict.fits);
}

// A lost free: the running total and the recorded one part; the report counts it.
TEST(KinetoMemory, LostEventsAreCounted) {
  const std::string json =
      R"({"traceEvents":[)"
      R"({"ph":"i","name":"[memory]","ts":1,"args":{"Device Type":1,"Device Id":0,"Bytes":100,"Total Allocated":100,"Total Reserved":512}},)"
      R"({"ph":"i","name":"[memory]","ts":2,"args":{"Device Type":1,"Device Id":0,"Bytes":200,"Total Allocated":250,"Total Reserved":512}}]})";
  const KinetoMemoryReport report = report_of({"inline.json", json});
  EXPECT_EQ(report.inconsistent_events, 1u);
  EXPECT_EQ(report.peak_allocated_bytes, 250);
}

TEST(KinetoMemory, ATraceWithoutMemoryEventsIsAnErrorNotZeroBytes) {
  const io::InputBytes input =
      io::read_input(std::string(PERFSIM_SHARED_DATA_DIR) +
                     "/traces/param-dlrm-8xV100/dlrm_kineto.tar.gz:dlrm_kineto/"
                     "worker0_step_12.1694128201545.pt.trace.json");
  EXPECT_THROW(report_of(input), InputError);
}

TEST(KinetoMemory, AnEventWithoutTotalsIsAnError) {
  const std::string json =
      R"({"traceEvents":[{"ph":"i","name":"[memory]","ts":1,"args":{"Device Type":1,"Bytes":1}}]})";
  EXPECT_THROW(trace_io::read_kineto_memory_events({"inline.json", json}), InputError);
}

}  // namespace
}  // namespace perfsim::memory
