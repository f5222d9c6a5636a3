// The host issue thread of a generated workload: the calibration's host costs (with_host_cost)
// run on the engine's CPU clock, one op after the other, and a kernel cannot start before its
// op was issued. A stretch of kernels shorter than the host cost per op is host-bound; kernels
// longer than it hide the host time. Clocks worked out by hand in each test.
#include <gtest/gtest.h>

#include "generators/llm/llm_trace_builder.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "scenario/llm_calibration.hpp"
#include "support/trace_builder.hpp"

namespace perfsim {
namespace {

using testing::TraceBuilder;

constexpr double kHostUsPerOp = 20;

RankResult simulate_one_rank(const Trace& trace, const validation::CalibrationPoint& point) {
  engine::MeasuredKernelDurations kernels;
  engine::MeasuredCommDurations communication;
  const engine::RankProgram program =
      engine::build_rank_program(trace, 0, 1, {&kernels, &communication, {}});
  // Zero T2..T5, no kernel gap, launch at the call: only the calibration's per-op cost remains.
  const HostOverheads overheads = scenario::with_host_cost(testing::zero_overheads(), point);
  engine::InProcessClockSync sync;
  std::vector<engine::RankSimulator> simulators;
  simulators.emplace_back(program, overheads, sync, false);
  engine::run_to_completion(simulators, sync);
  return simulators.front().result();
}

Trace ops_of(int count, DurationUs kernel_us) {
  TraceBuilder builder;
  for (int i = 0; i < count; ++i)
    builder.op("aten::add", {kernel_us});
  return builder.build();
}

validation::CalibrationPoint per_op(double host_us) {
  validation::CalibrationPoint point;
  point.host_us_per_forward_op = host_us;
  point.host_us_per_backward_op = host_us;
  return point;
}

// Tags op `index` of `trace` with a "phase" attribute, as the LLM generator does.
void set_phase(Trace& trace, std::size_t index, const std::string& phase) {
  trace.ops.at(index).attributes.push_back({"phase", phase});
}

// Ten 5 us kernels, 20 us of host time each: op i is issued at 20 i and its kernel runs
// [20 i, 20 i + 5]; the GPU idles 15 us of every 20. Iteration 10 x 20 + 5 = 205 us.
TEST(HostIssueBound, TinyKernelsWaitForTheHost) {
  const RankResult result = simulate_one_rank(ops_of(10, 5), per_op(kHostUsPerOp));
  EXPECT_DOUBLE_EQ(result.iteration_us, 205);
  EXPECT_DOUBLE_EQ(result.gpu_busy_us, 50);
  // Without host cost the same stretch is the kernels alone.
  EXPECT_DOUBLE_EQ(simulate_one_rank(ops_of(10, 5), per_op(0)).iteration_us, 50);
}

// Ten 200 us kernels: the first waits 20 us for its issue, the host issues each next op while
// the previous kernel runs, so only the first op's host time shows: 20 + 10 x 200 = 2020 us.
TEST(HostIssueBound, LongKernelsHideTheHost) {
  const RankResult result = simulate_one_rank(ops_of(10, 200), per_op(kHostUsPerOp));
  EXPECT_DOUBLE_EQ(result.iteration_us, 2020);
  EXPECT_DOUBLE_EQ(result.cpu_us, 200);  // the host finished long before the GPU
}

// Mixed: a 100 us kernel, then ten 1 us kernels. The long kernel runs [20, 120] while the host
// issues the first four small ops (40..100): they wait for the stream and run [120, 124], the
// fifth (issued at 120) [124, 125]. The other five are host-bound: issued at 140..220, the last
// ends at 221. GPU busy 100 + 10 x 1.
TEST(HostIssueBound, EachStretchIsBoundBySlowerSide) {
  TraceBuilder builder;
  builder.op("aten::mm", {100});
  for (int i = 0; i < 10; ++i)
    builder.op("aten::add", {1});
  const RankResult result = simulate_one_rank(builder.build(), per_op(kHostUsPerOp));
  EXPECT_DOUBLE_EQ(result.iteration_us, 221);
  EXPECT_DOUBLE_EQ(result.gpu_busy_us, 110);
}

// A communication call costs the per-op time plus the per-collective extra on the host.
TEST(HostIssueBound, CollectiveCallsCostTheirExtraHostTime) {
  validation::CalibrationPoint point = per_op(kHostUsPerOp);
  point.host_us_per_collective = 30;
  TraceBuilder builder;
  builder.op("aten::add", {1});
  builder.op("nccl:all_reduce", {1}, kDefaultCommStream);
  builder.op("aten::add", {1});
  // Issued at 20, 20 + 50 = 70 and 90; the last kernel ends at 91.
  EXPECT_DOUBLE_EQ(simulate_one_rank(builder.build(), point).iteration_us, 91);
}

// Ops of the backward phase cost the per backward op time, every other op the per forward op
// time; a collective adds its extra to its phase's cost; the expert GEMM launch from TE's C++
// loop keeps the measured launch floor in the backward too.
TEST(HostIssueBound, BackwardOpsCostThePerBackwardOpTime) {
  validation::CalibrationPoint point = per_op(kHostUsPerOp);
  point.host_us_per_backward_op = 8;
  point.host_us_per_collective = 30;
  TraceBuilder builder;
  builder.op("aten::add", {1});                            // forward: issued at 20
  builder.op("aten::add", {1});                            // recompute: 40
  builder.op("aten::add", {1});                            // backward: 48
  builder.op("nccl:all_reduce", {1}, kDefaultCommStream);  // backward: 48 + 8 + 30 = 86
  builder.op(std::string(generators::llm::kExpertGemmLaunchOpName), {});  // backward: 86 + 13
  builder.op("aten::add", {1});                                           // optimizer: 119
  Trace trace = builder.build();
  const char* phases[] = {"forward", "recompute", "backward", "backward", "backward", "optimizer"};
  for (std::size_t i = 0; i < trace.ops.size(); ++i)
    set_phase(trace, i, phases[i]);
  const RankResult split = simulate_one_rank(trace, point);
  EXPECT_DOUBLE_EQ(split.cpu_us, 119);
  EXPECT_DOUBLE_EQ(split.iteration_us, 120);
  // One cost for every op: the phases change nothing (20 + 20 + 20 + 50 + 13 + 20 = 143).
  point.host_us_per_backward_op = point.host_us_per_forward_op;
  EXPECT_DOUBLE_EQ(simulate_one_rank(trace, point).cpu_us, 143);
}

// A backward op cost above the forward one adds time, and a phase's adjustment never makes an
// op's host time negative.
TEST(HostIssueBound, PhaseAdjustmentAddsAndStopsAtZero) {
  TraceBuilder builder;
  builder.op("aten::add", {1});
  builder.op("aten::add", {1});
  Trace trace = builder.build();
  set_phase(trace, 0, "forward");
  set_phase(trace, 1, "backward");
  validation::CalibrationPoint point = per_op(10);
  point.host_us_per_backward_op = 25;
  EXPECT_DOUBLE_EQ(simulate_one_rank(trace, point).cpu_us, 35);
  point.host_us_per_backward_op = 0;
  EXPECT_DOUBLE_EQ(simulate_one_rank(trace, point).cpu_us, 10);
}

}  // namespace
}  // namespace perfsim
