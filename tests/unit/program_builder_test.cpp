// ProgramBuilder (mpi_sim/engine/program_builder.hpp) compiles a trace's ops batch by batch:
// given the ops of profiled traces (nested ops, annotations, collectives, blocking calls,
// recorded host timing) in batches as small as the trace allows, it builds the program that
// build_rank_program builds from the whole trace, op for op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/program_builder.hpp"
#include "trace_io/kineto_loader.hpp"

namespace perfsim::engine {
namespace {

const std::string kData = std::string(PERFSIM_TEST_DATA_DIR) + "/kineto/";

// Positions p where the trace may be cut into batches [.., p) and [p, ..): no top-level op's
// subtree spans p, and no op is on the other side of p from an ancestor on its way up to its
// nearest working (non-annotation) ancestor (the batch would not see that it is nested).
std::vector<std::size_t> cut_points(const Trace& trace) {
  const std::size_t n = trace.ops.size();
  std::vector<int> spanned(n + 1, 0);                     // difference array over cuts
  auto forbid = [&](std::size_t low, std::size_t high) {  // cuts in (low, high]
    if (low < high) {
      ++spanned[low + 1];
      --spanned[high + 1];
    }
  };
  for (const std::size_t top : trace.top_level_positions()) {
    std::size_t low = top, high = top;
    std::vector<std::size_t> stack{top};
    while (!stack.empty()) {
      const std::size_t at = stack.back();
      stack.pop_back();
      low = std::min(low, at);
      high = std::max(high, at);
      for (const std::int64_t child : trace.ops[at].child_ids) {
        const std::ptrdiff_t position = trace.position_of(child);
        if (position >= 0 && static_cast<std::size_t>(position) != at)
          stack.push_back(static_cast<std::size_t>(position));
      }
    }
    forbid(low, high);
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t low = i, high = i;
    bool under_working = false;
    std::size_t steps = 0;
    for (std::int64_t parent = trace.ops[i].parent_id; parent != kNoParent && steps++ < n;) {
      const std::ptrdiff_t position = trace.position_of(parent);
      if (position < 0 || static_cast<std::size_t>(position) == i)
        break;
      low = std::min(low, static_cast<std::size_t>(position));
      high = std::max(high, static_cast<std::size_t>(position));
      const Op& ancestor = trace.ops[static_cast<std::size_t>(position)];
      if (!ancestor.is_annotation) {
        under_working = true;
        break;
      }
      parent = ancestor.parent_id;
    }
    if (under_working)
      forbid(low, high);
  }
  std::vector<std::size_t> cuts;
  int running = 0;
  for (std::size_t p = 1; p < n; ++p) {
    running += spanned[p];
    if (running == 0)
      cuts.push_back(p);
  }
  return cuts;
}

void expect_same_program(const RankProgram& a, const RankProgram& b) {
  ASSERT_EQ(a.ops.size(), b.ops.size());
  EXPECT_EQ(a.ops.distinct_ops(), b.ops.distinct_ops());
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.coverage.top_level_ops, b.coverage.top_level_ops);
  EXPECT_EQ(a.coverage.kernels, b.coverage.kernels);
  EXPECT_EQ(a.coverage.collectives, b.coverage.collectives);
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const SimOp& x = a.ops[i];
    const SimOp& y = b.ops[i];
    ASSERT_EQ(a.ops.trace_position(i), b.ops.trace_position(i)) << "op " << i;
    ASSERT_EQ(a.ops.body_index(i), b.ops.body_index(i)) << "op " << i;
    EXPECT_EQ(x.name, y.name) << "op " << i;
    ASSERT_EQ(x.kernels.size(), y.kernels.size()) << "op " << i;
    for (std::size_t k = 0; k < x.kernels.size(); ++k) {
      EXPECT_EQ(x.kernels[k].name, y.kernels[k].name) << "op " << i;
      EXPECT_EQ(x.kernels[k].duration_us, y.kernels[k].duration_us) << "op " << i;
      EXPECT_EQ(x.kernels[k].recorded_launch_offset_us, y.kernels[k].recorded_launch_offset_us);
      EXPECT_EQ(x.kernels[k].recorded_launch_us, y.kernels[k].recorded_launch_us) << "op " << i;
    }
    EXPECT_EQ(x.host_sync, y.host_sync) << "op " << i;
    EXPECT_EQ(x.waits_for_communication, y.waits_for_communication) << "op " << i;
    EXPECT_EQ(x.continues_previous, y.continues_previous) << "op " << i;
    EXPECT_EQ(x.consumed_tensor_ids, y.consumed_tensor_ids) << "op " << i;
    ASSERT_EQ(x.recorded_host == nullptr, y.recorded_host == nullptr) << "op " << i;
    if (x.recorded_host) {
      EXPECT_EQ(x.recorded_host->thread_gap_us, y.recorded_host->thread_gap_us) << "op " << i;
      EXPECT_EQ(x.recorded_host->start_offset_us, y.recorded_host->start_offset_us) << "op " << i;
      EXPECT_EQ(x.recorded_host->cpu_us, y.recorded_host->cpu_us) << "op " << i;
    }
    ASSERT_EQ(x.collective == nullptr, y.collective == nullptr) << "op " << i;
    if (x.collective) {
      EXPECT_EQ(x.collective->group, y.collective->group) << "op " << i;
      EXPECT_EQ(x.collective->index_in_group, y.collective->index_in_group) << "op " << i;
      EXPECT_EQ(x.collective->members, y.collective->members) << "op " << i;
      EXPECT_EQ(x.collective->duration_us, y.collective->duration_us) << "op " << i;
      EXPECT_EQ(x.collective->produced_tensor_ids, y.collective->produced_tensor_ids);
    }
  }
}

// `trace` compiled whole and in batches cut at every cut point.
void expect_batches_build_the_whole_program(const Trace& trace, bool replay_recorded_host) {
  const MeasuredKernelDurations kernels;
  const MeasuredCommDurations comm;
  const ProgramSources sources{&kernels, &comm, {}};
  ProgramOptions options;
  options.replay_recorded_host = replay_recorded_host;
  const RankProgram whole =
      build_rank_program(trace, trace.rank, trace.world_size, sources, options);

  const std::vector<std::size_t> cuts = cut_points(trace);
  ASSERT_GE(cuts.size(), 2u) << "too few places to cut " << trace.source;
  Trace header = trace;
  header.ops.clear();
  ProgramBuilder builder(header, trace.rank, trace.world_size, sources, options);
  std::size_t first = 0;
  for (std::size_t c = 0; c <= cuts.size(); ++c) {
    const std::size_t end = c < cuts.size() ? cuts[c] : trace.ops.size();
    Trace batch;
    batch.ops.assign(trace.ops.begin() + static_cast<std::ptrdiff_t>(first),
                     trace.ops.begin() + static_cast<std::ptrdiff_t>(end));
    builder.add(batch, first);
    first = end;
  }
  expect_same_program(builder.finish(), whole);
}

TEST(ProgramBuilder, BatchesOfAProfiledTraceBuildItsWholeProgram) {
  for (const char* file : {"job2_rank0.json", "job2_rank1.json", "deep_queue_rank0.json"}) {
    SCOPED_TRACE(file);
    const Trace trace = trace_io::load_kineto_trace_file(kData + file);
    expect_batches_build_the_whole_program(trace, /*replay_recorded_host=*/false);
    expect_batches_build_the_whole_program(trace, /*replay_recorded_host=*/true);
  }
}

}  // namespace
}  // namespace perfsim::engine
