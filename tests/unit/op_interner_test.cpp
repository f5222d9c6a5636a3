// A compiled program stores each distinct op once (SimOpList, mpi_sim/engine/op_interner.hpp):
// the synthetic workload repeats one compute op and one collective per repetition, so its
// program holds one compute op body and one body per collective, and still reads, op by op,
// as the trace it came from.
#include <gtest/gtest.h>

#include <functional>
#include <utility>
#include <vector>

#include "generators/synthetic_workload.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/op_interner.hpp"
#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::engine {
namespace {

TEST(OpInterner, RepeatedOpsShareOneBodyAndKeepTheirTracePositions) {
  generators::SyntheticWorkload workload;
  workload.ranks = 4;
  workload.repetitions = 20;
  const Trace trace = generators::generate_synthetic_rank(workload, 1);
  const MeasuredKernelDurations kernels;
  const MeasuredCommDurations comm;
  const RankProgram program = build_rank_program(trace, 1, workload.ranks, {&kernels, &comm, {}});
  ASSERT_EQ(program.coverage.collectives, 20u);
  ASSERT_EQ(program.ops.size(), 40u);  // a compute op and an all-reduce per repetition
  std::size_t without_collective = 0;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const SimOp& op = program.ops[i];
    EXPECT_EQ(op.name, trace.ops.at(program.ops.trace_position(i)).name) << i;
    without_collective += op.collective ? 0 : 1;
  }
  // Every op without a collective is one of the few distinct ones; each collective its own.
  EXPECT_GE(without_collective, 20u);
  // (the first compute op waits for no collective, the others for the one before).
  EXPECT_EQ(program.ops.distinct_ops(), 20u + 2u);
  EXPECT_NE(&program.ops[0], &program.ops[2]);
  EXPECT_EQ(&program.ops[2], &program.ops[38]) << "compute ops share a body";
}

TEST(OpInterner, OpsThatDifferInAnyBitAreKeptApart) {
  SimOpList ops;
  OpInterner interner;
  SimOp op;
  op.name = "aten::mm";
  op.kernels.push_back(SimKernel{});
  op.kernels.back().duration_us = 1.5;
  interner.append(ops, op, 0);
  interner.append(ops, op, 3);
  op.kernels.back().duration_us = -0.0;
  interner.append(ops, op, 4);
  op.kernels.back().duration_us = 0.0;  // equal to -0.0 as a double, not as bits
  interner.append(ops, op, 5);
  op.consumed_tensor_ids.push_back(0);
  interner.append(ops, op, 6);
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops.distinct_ops(), 4u);
  EXPECT_EQ(&ops[0], &ops[1]);
  EXPECT_EQ(ops.trace_position(1), 3u);
  EXPECT_NE(&ops[2], &ops[3]);
  EXPECT_EQ(ops[4].consumed_tensor_ids, std::vector<std::int64_t>{0});
}

TEST(OpInterner, OpsThatDifferInAnyFieldAreKeptApart) {
  // One change per member of SimOp and SimKernel the interner may share (an op with a
  // collective or a recorded host timing is its own): each must make a new body.
  SimOp base;
  base.name = "aten::mm";
  base.kernels.push_back(SimKernel{});
  base.kernels.back().name = "sm90_gemm";
  base.kernels.back().duration_us = 1.5;
  const std::vector<std::pair<const char*, std::function<void(SimOp&)>>> changes = {
      {"collective_index", [](SimOp& op) { op.collective_index = 1; }},
      {"name", [](SimOp& op) { op.name = "aten::addmm"; }},
      {"phase", [](SimOp& op) { op.phase = "backward"; }},
      {"kernel count", [](SimOp& op) { op.kernels.push_back(op.kernels.back()); }},
      {"waits_for_communication", [](SimOp& op) { op.waits_for_communication = true; }},
      {"waits_for_seq", [](SimOp& op) { op.waits_for_seq = 0; }},
      {"host_sync", [](SimOp& op) { op.host_sync = HostSync::kStream; }},
      {"queued_before_trace", [](SimOp& op) { op.queued_before_trace = true; }},
      {"continues_previous", [](SimOp& op) { op.continues_previous = true; }},
      {"continued_by_next", [](SimOp& op) { op.continued_by_next = true; }},
      {"measured_start_us", [](SimOp& op) { op.measured_start_us = 2.0; }},
      {"consumed_tensor_ids", [](SimOp& op) { op.consumed_tensor_ids = {7}; }},
      {"kernel name", [](SimOp& op) { op.kernels[0].name = "sm80_gemm"; }},
      {"kernel stream", [](SimOp& op) { op.kernels[0].stream = 9; }},
      {"kernel category", [](SimOp& op) { op.kernels[0].category = KernelCategory::kGemm; }},
      {"kernel duration_us", [](SimOp& op) { op.kernels[0].duration_us = 1.25; }},
      {"kernel launch_api", [](SimOp& op) { op.kernels[0].launch_api = "cuLaunchKernel"; }},
      {"kernel is_collective", [](SimOp& op) { op.kernels[0].is_collective = true; }},
      {"kernel host_waits", [](SimOp& op) { op.kernels[0].host_waits = true; }},
      {"kernel recorded_launch_offset_us",
       [](SimOp& op) { op.kernels[0].recorded_launch_offset_us = 0.5; }},
      {"kernel recorded_launch_us", [](SimOp& op) { op.kernels[0].recorded_launch_us = 0.5; }},
  };
  for (const auto& [field, change] : changes) {
    SimOpList ops;
    OpInterner interner;
    SimOp changed = base;
    change(changed);
    interner.append(ops, base, 0);
    interner.append(ops, changed, 1);
    interner.append(ops, base, 2);
    interner.append(ops, changed, 3);
    EXPECT_EQ(ops.distinct_ops(), 2u) << field;
    EXPECT_NE(&ops[0], &ops[1]) << field;
    EXPECT_EQ(&ops[0], &ops[2]) << field;
    EXPECT_EQ(&ops[1], &ops[3]) << field;
  }
}

}  // namespace
}  // namespace perfsim::engine
