// Link sharing in the engine (RankSimulator posting through LinkOccupancy): hand-computed clocks
// for overlapping collectives on one NIC, on different link classes and partly overlapping, and
// bit-identical results from every in-process clock sync.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "mpi_sim/engine/folded_clock_sync.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/engine/symmetric_clock_sync.hpp"
#include "support/trace_builder.hpp"

namespace perfsim::engine {
namespace {

using testing::TraceBuilder;
using testing::zero_overheads;

// A model (durations combine by the longest) whose collective takes its size in microseconds.
class BytesAsMicroseconds final : public CommDurationSource {
 public:
  DurationUs collective_duration_us(const CollectiveCall& call) const override {
    return static_cast<DurationUs>(call.comm->bytes_in);
  }
  std::string_view name() const override { return "bytes-as-us"; }
};

// Groups named "nic*" cross nodes, "nvlink*" stay in one; `latency_fraction` of each
// duration is latency.
class ByGroupName final : public LinkSharingRule {
 public:
  explicit ByGroupName(double latency_fraction = 0) : latency_fraction_(latency_fraction) {}
  LinkDemand demand(const CommInfo& comm, std::span<const int>) const override {
    const bool nic = comm.process_group.starts_with("nic");
    return {.sends = true, .receives = true, .nic = nic, .latency_fraction = latency_fraction_};
  }

 private:
  double latency_fraction_;
};

constexpr StreamId kFirstCommStream = 20;
constexpr StreamId kSecondCommStream = 21;

struct TwoCollectives {
  std::string first_group = "nic-dp";
  std::string second_group = "nic-pp";
  DurationUs compute_before_second_us = 0;
};

// Rank r: a collective of 100 us on the first group and stream, compute, a collective of
// 100 us on the second group and stream; groups {0, 1}.
Trace two_collectives(int rank, const TwoCollectives& shape) {
  TraceBuilder builder(rank, 2);
  builder.group(shape.first_group, {0, 1}).group(shape.second_group, {0, 1});
  builder.collective(CollectiveKind::kAllReduce, 100, 0, -1, shape.first_group, kFirstCommStream);
  if (shape.compute_before_second_us > 0)
    builder.op("compute", {shape.compute_before_second_us});
  builder.collective(CollectiveKind::kAllReduce, 100, 0, -1, shape.second_group, kSecondCommStream);
  return builder.build();
}

const MeasuredKernelDurations kKernels;
const BytesAsMicroseconds kComm;

std::vector<RankProgram> programs_of(const std::vector<Trace>& traces,
                                     std::shared_ptr<const LinkSharingRule> rule) {
  std::vector<RankProgram> programs;
  for (const Trace& trace : traces) {
    programs.push_back(build_rank_program(trace, trace.rank, static_cast<int>(traces.size()),
                                          {&kKernels, &kComm, {}}));
    programs.back().link_sharing = rule;
  }
  return programs;
}

std::vector<RankResult> run(const std::vector<Trace>& traces,
                            std::shared_ptr<const LinkSharingRule> rule) {
  const std::vector<RankProgram> programs = programs_of(traces, std::move(rule));
  InProcessClockSync sync;
  return simulate_programs(programs, zero_overheads(), sync);
}

std::vector<Trace> both_ranks(const TwoCollectives& shape) {
  return {two_collectives(0, shape), two_collectives(1, shape)};
}

TEST(LinkSharingEngine, TwoEqualCollectivesOnOneNicTakeTwiceAsLong) {
  const auto traces = both_ranks({});
  // Alone: both [0, 100]. Shared: the second moves at half rate beside the first, [0, 200].
  EXPECT_DOUBLE_EQ(run(traces, nullptr)[0].iteration_us, 100);
  const auto shared = run(traces, std::make_shared<ByGroupName>());
  EXPECT_DOUBLE_EQ(shared[0].iteration_us, 200);
  EXPECT_DOUBLE_EQ(shared[1].iteration_us, 200);
  EXPECT_DOUBLE_EQ(shared[0].groups.at("nic-dp").time_us, 100);
  EXPECT_DOUBLE_EQ(shared[0].groups.at("nic-pp").time_us, 200);
}

TEST(LinkSharingEngine, CollectivesOnDifferentLinkClassesDoNotSlowDown) {
  const auto shared =
      run(both_ranks({.second_group = "nvlink-tp"}), std::make_shared<ByGroupName>());
  EXPECT_DOUBLE_EQ(shared[0].iteration_us, 100);
  EXPECT_DOUBLE_EQ(shared[0].groups.at("nvlink-tp").time_us, 100);
}

// The second is ready at 50 (after the compute): it shares [50, 150] with the first's last 50
// (moving 50), then runs alone to 200: 150 us.
TEST(LinkSharingEngine, PartialOverlapStretchesTheOverlappedWindow) {
  const auto shared =
      run(both_ranks({.compute_before_second_us = 50}), std::make_shared<ByGroupName>());
  EXPECT_DOUBLE_EQ(shared[0].groups.at("nic-pp").time_us, 150);
  EXPECT_DOUBLE_EQ(shared[0].iteration_us, 200);
}

// 20% latency: transfers of 80 each share the NIC and end at 160; the second's latency (20)
// is not stretched: 180.
TEST(LinkSharingEngine, LatencyIsNotShared) {
  const auto shared = run(both_ranks({}), std::make_shared<ByGroupName>(0.2));
  EXPECT_DOUBLE_EQ(shared[0].groups.at("nic-pp").time_us, 180);
}

// A member ready later posts a longer candidate; the collective takes the longest: rank 1
// computes 50 before its second collective, rank 0 does not. Rank 0 alone would see 200 (full
// overlap), rank 1 150 (partial): the collective starts at 50 and takes 200.
TEST(LinkSharingEngine, MembersCombineTheirSharedDurationsByTheLongest) {
  const std::vector<Trace> traces = {two_collectives(0, {}),
                                     two_collectives(1, {.compute_before_second_us = 50})};
  const auto shared = run(traces, std::make_shared<ByGroupName>());
  EXPECT_DOUBLE_EQ(shared[0].groups.at("nic-pp").time_us, 200);
  EXPECT_DOUBLE_EQ(shared[1].iteration_us, 250);
}

// Four ranks, two iterations of skewed compute with collectives on three groups and streams:
// every in-process clock sync gives the same bits.
std::vector<Trace> skewed_four_ranks() {
  std::vector<Trace> traces;
  for (int rank = 0; rank < 4; ++rank) {
    TraceBuilder builder(rank, 4);
    const std::string pair = rank < 2 ? "nic-a" : "nic-b";
    const std::string local = rank % 2 == 0 ? "nvlink-even" : "nvlink-odd";
    builder.group("nic-all", {0, 1, 2, 3})
        .group(pair, rank < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3})
        .group(local, rank % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3});
    for (int step = 0; step < 3; ++step) {
      builder.op("compute", {10.0 + 7 * rank + 3 * step});
      builder.collective(CollectiveKind::kAllReduce, 90 + 10 * step, 0, -1, "nic-all", 20);
      builder.op("compute", {5.0 + 11 * rank});
      builder.collective(CollectiveKind::kAllReduce, 60, 0, -1, pair, 21);
      builder.collective(CollectiveKind::kAllReduce, 40, 0, -1, local, 22);
      builder.op("compute", {17.0 + rank});
      builder.collective(CollectiveKind::kAllReduce, 30 + step, 0, -1, pair, 21);
    }
    traces.push_back(builder.build());
  }
  return traces;
}

void expect_identical(const std::vector<RankResult>& a, const std::vector<RankResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].iteration_us, b[i].iteration_us) << i;
    EXPECT_EQ(a[i].gpu_busy_us, b[i].gpu_busy_us) << i;
    EXPECT_EQ(a[i].by_category_us, b[i].by_category_us) << i;
    for (const auto& [group, traffic] : a[i].groups) {
      EXPECT_EQ(traffic.time_us, b[i].groups.at(group).time_us) << i << " " << group;
      EXPECT_EQ(traffic.exposed_us, b[i].groups.at(group).exposed_us) << i << " " << group;
    }
  }
}

TEST(LinkSharingEngine, EveryInProcessClockSyncGivesTheSameBits) {
  const std::vector<RankProgram> programs =
      programs_of(skewed_four_ranks(), std::make_shared<ByGroupName>(0.1));
  InProcessClockSync in_process;
  const auto expected = simulate_programs(programs, zero_overheads(), in_process);
  SymmetricClockSync symmetric({0, 1, 2, 3});
  expect_identical(expected, simulate_programs(programs, zero_overheads(), symmetric));
  FoldedClockSync folded({0, 1, 2, 3}, {});
  expect_identical(expected, simulate_programs(programs, zero_overheads(), folded));
  // Ranks traversed in another order resolve the same way.
  std::vector<RankProgram> reversed(programs.rbegin(), programs.rend());
  InProcessClockSync other_order;
  std::vector<RankResult> results = simulate_programs(reversed, zero_overheads(), other_order);
  std::reverse(results.begin(), results.end());
  expect_identical(expected, results);
  // And sharing changed something (the test would not notice a rule never applied).
  const std::vector<RankProgram> alone = programs_of(skewed_four_ranks(), nullptr);
  InProcessClockSync unshared;
  EXPECT_GT(expected[0].iteration_us,
            simulate_programs(alone, zero_overheads(), unshared)[0].iteration_us);
}

}  // namespace
}  // namespace perfsim::engine
