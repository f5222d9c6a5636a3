#pragma once
// Two simulations of the same rank (shared or bound programs against programs compiled in full,
// a folded run against the unfolded one) must report the very same result: every field of
// RankResult compared exactly, doubles bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "perfsim/rank_result.hpp"

namespace perfsim::test_support {

// Slices are recorded as collectives resolve, an order that depends on how the traversal
// interleaves ranks (folded or not, one MPI layout or another): compare them in time order.
inline std::vector<TimelineSlice> in_time_order(std::vector<TimelineSlice> slices) {
  std::sort(slices.begin(), slices.end(), [](const TimelineSlice& a, const TimelineSlice& b) {
    return std::tie(a.lane, a.start_us, a.duration_us, a.name, a.collective_key) <
           std::tie(b.lane, b.start_us, b.duration_us, b.name, b.collective_key);
  });
  return slices;
}

inline void expect_same_result(const RankResult& actual, const RankResult& expected) {
  const std::string rank = "rank " + std::to_string(expected.sim_rank);
  EXPECT_EQ(actual.sim_rank, expected.sim_rank);
  EXPECT_EQ(actual.iteration_us, expected.iteration_us) << rank;
  EXPECT_EQ(actual.cpu_us, expected.cpu_us) << rank;
  EXPECT_EQ(actual.kernel_time_us, expected.kernel_time_us) << rank;
  EXPECT_EQ(actual.gpu_busy_us, expected.gpu_busy_us) << rank;
  EXPECT_EQ(actual.gpu_idle_us, expected.gpu_idle_us) << rank;
  EXPECT_EQ(actual.by_category_us, expected.by_category_us) << rank;
  EXPECT_EQ(actual.ops, expected.ops) << rank;
  EXPECT_EQ(actual.kernels, expected.kernels) << rank;
  ASSERT_EQ(actual.streams.size(), expected.streams.size()) << rank;
  for (std::size_t i = 0; i < expected.streams.size(); ++i) {
    EXPECT_EQ(actual.streams[i].stream, expected.streams[i].stream) << rank;
    EXPECT_EQ(actual.streams[i].busy_us, expected.streams[i].busy_us) << rank;
    EXPECT_EQ(actual.streams[i].by_category_us, expected.streams[i].by_category_us) << rank;
  }
  ASSERT_EQ(actual.steps.size(), expected.steps.size()) << rank;
  for (std::size_t i = 0; i < expected.steps.size(); ++i) {
    const StepSpan& a = actual.steps[i];
    const StepSpan& b = expected.steps[i];
    EXPECT_TRUE(a.phase == b.phase && a.micro_batch == b.micro_batch && a.chunk == b.chunk &&
                a.start_us == b.start_us && a.end_us == b.end_us)
        << rank << " step " << i;
  }
  ASSERT_EQ(actual.groups.size(), expected.groups.size()) << rank;
  for (const auto& [group, traffic] : expected.groups) {
    ASSERT_TRUE(actual.groups.contains(group)) << rank << " " << group;
    const GroupTraffic& mine = actual.groups.at(group);
    EXPECT_EQ(mine.collectives, traffic.collectives) << rank << " " << group;
    EXPECT_EQ(mine.bytes, traffic.bytes) << rank << " " << group;
    EXPECT_EQ(mine.time_us, traffic.time_us) << rank << " " << group;
    EXPECT_EQ(mine.exposed_us, traffic.exposed_us) << rank << " " << group;
    EXPECT_EQ(mine.exposed_before_start_us, traffic.exposed_before_start_us)
        << rank << " " << group;
  }
  const std::vector<TimelineSlice> actual_slices = in_time_order(actual.timeline);
  const std::vector<TimelineSlice> expected_slices = in_time_order(expected.timeline);
  ASSERT_EQ(actual_slices.size(), expected_slices.size()) << rank;
  for (std::size_t i = 0; i < expected_slices.size(); ++i) {
    const TimelineSlice& a = actual_slices[i];
    const TimelineSlice& b = expected_slices[i];
    ASSERT_TRUE(a.name == b.name && a.lane == b.lane && a.start_us == b.start_us &&
                a.duration_us == b.duration_us && a.category == b.category &&
                a.collective_key == b.collective_key)
        << rank << " slice " << i << ": " << a.name << " " << a.collective_key << " vs " << b.name
        << " " << b.collective_key;
  }
}

}  // namespace perfsim::test_support
