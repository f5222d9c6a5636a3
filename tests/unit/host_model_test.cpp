// The host model: back-pressure: a launch blocks while the device already holds
// launch_queue_depth unfinished launches, so a CPU that runs far ahead of the GPU is held back
// as CUDA holds it; host-blocking calls wait for the device.
#include <gtest/gtest.h>

#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "scenario/simulation_inputs.hpp"
#include "support/trace_builder.hpp"
#include "trace_io/kineto_loader.hpp"

namespace perfsim::engine {
namespace {

RankResult simulate(const Trace& trace, const HostOverheads& overheads) {
  MeasuredKernelDurations kernels;
  MeasuredCommDurations comm;
  const RankProgram program = build_rank_program(trace, 0, 1, {&kernels, &comm, {}});
  UnsynchronizedClockSync sync;
  std::vector<RankSimulator> simulators;
  simulators.emplace_back(program, overheads, sync);
  run_to_completion(simulators, sync);
  return simulators.front().result();
}

// 20 kernels of 100 us on one stream, every host overhead zero: kernel i ends at
// (i + 1) * 100. With room for 4 pending launches, launching kernel i >= 4 waits for kernel
// i - 4 to end, so the CPU is done when kernel 15 ends: 1600 us. Unbounded: at 0.
TEST(HostModel, AFullQueueBlocksTheLaunchingCpu) {
  const Trace trace = testing::TraceBuilder().op("burst", std::vector<DurationUs>(20, 100)).build();
  HostOverheads overheads = testing::zero_overheads();
  overheads.launch.launch_queue_depth = 4;
  RankResult bounded = simulate(trace, overheads);
  EXPECT_DOUBLE_EQ(bounded.cpu_us, 1600);
  EXPECT_DOUBLE_EQ(bounded.iteration_us, 2000);
  overheads.launch.launch_queue_depth = 0;
  RankResult unbounded = simulate(trace, overheads);
  EXPECT_DOUBLE_EQ(unbounded.cpu_us, 0);
  EXPECT_DOUBLE_EQ(unbounded.iteration_us, 2000);
}

// Work queued before the trace began fills the queue the first launch meets: 4 queued
// kernels of 100 us (ending 100..400) and a depth of 4 hold the first launch until 100.
TEST(HostModel, KernelsQueuedBeforeTheTraceFillTheQueue) {
  Trace trace = testing::TraceBuilder().op("step", {10}, 8).build();
  for (int i = 0; i < 4; ++i) {
    Kernel kernel;
    kernel.name = "previous_step_kernel";
    kernel.stream = kDefaultComputeStream;
    kernel.measured_duration_us = 100;
    trace.unattributed_kernels.push_back(kernel);
  }
  HostOverheads overheads = testing::zero_overheads();
  overheads.launch.launch_queue_depth = 4;
  RankResult result = simulate(trace, overheads);
  EXPECT_DOUBLE_EQ(result.cpu_us, 100);
  EXPECT_DOUBLE_EQ(result.iteration_us, 400);
}

// tests/data/kineto/deep_queue_rank0.json: 40 launches of 100 us kernels issued in 80 us of
// CPU time, then aten::item blocking in cudaStreamSynchronize. The replay's CPU must wait for
// the last kernel (ends 20 + 40 x 100 = 4020 us after the step start; measured step 4200).
TEST(HostModel, HostBlockingCallWaitsForTheDeepQueueToDrain) {
  scenario::SimulateOptions options;
  options.kineto_specs = {std::string(PERFSIM_TEST_DATA_DIR) + "/kineto/deep_queue_rank0.json"};
  scenario::SimulationInputs inputs = scenario::load_simulation_inputs(options, 1, {0});
  UnsynchronizedClockSync sync;
  std::vector<RankSimulator> simulators;
  simulators.emplace_back(inputs.programs.front(), inputs.overheads, sync);
  run_to_completion(simulators, sync);
  const RankResult result = simulators.front().result();
  EXPECT_GE(result.cpu_us, 4000);
  EXPECT_LT(result.cpu_us, 4200);
}

// A synchronous cudaMemcpy returns when its copy is done: the CPU waits behind the 100 us
// kernel queued before it on the stream and the 50 us copy (zero overheads: done at 150).
TEST(HostModel, SynchronousMemcpyBlocksTheHost) {
  Trace trace = testing::TraceBuilder().op("aten::mm", {100}).op("aten::copy_", {50}).build();
  trace.ops[1].kernels[0].name = "Memcpy DtoD (Device -> Device)";
  trace.ops[1].kernels[0].launch_api = "cudaMemcpy";
  EXPECT_DOUBLE_EQ(simulate(trace, testing::zero_overheads()).cpu_us, 150);
  trace.ops[1].kernels[0].launch_api = "cudaMemcpyAsync";
  EXPECT_DOUBLE_EQ(simulate(trace, testing::zero_overheads()).cpu_us, 0);
}

// Per-thread CPU timelines in a replay of recorded host time: a data-loader thread busy from
// 20 to 400 us does not hold back the main thread, whose op B (recorded at 120 us) launches
// at 130 as recorded; the CPU is done when the loader thread ends (400).
TEST(HostModel, ThreadsKeepTheirOwnCpuTimelines) {
  const std::string json = R"({"distributedInfo":{"rank":0,"world_size":1},"traceEvents":[
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":1000,"dur":1000},
    {"ph":"X","cat":"cpu_op","name":"A","pid":1,"tid":1,"ts":1000,"dur":100},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1010,"dur":5,"args":{"correlation":1}},
    {"ph":"X","cat":"kernel","name":"k_a","pid":1,"tid":7,"ts":1020,"dur":50,"args":{"stream":7,"correlation":1}},
    {"ph":"X","cat":"cpu_op","name":"pin_memory","pid":1,"tid":2,"ts":1020,"dur":380},
    {"ph":"X","cat":"cpu_op","name":"B","pid":1,"tid":1,"ts":1120,"dur":80},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1130,"dur":5,"args":{"correlation":2}},
    {"ph":"X","cat":"kernel","name":"k_b","pid":1,"tid":7,"ts":1140,"dur":50,"args":{"stream":7,"correlation":2}}]})";
  const Trace trace = trace_io::load_kineto_trace({"threads.json", json});
  MeasuredKernelDurations kernels;
  MeasuredCommDurations comm;
  ProgramOptions options;
  options.replay_recorded_host = true;
  const RankProgram program = build_rank_program(trace, 0, 1, {&kernels, &comm, {}}, options);
  UnsynchronizedClockSync sync;
  const HostOverheads overheads = testing::zero_overheads();  // outlives the simulator
  std::vector<RankSimulator> simulators;
  simulators.emplace_back(program, overheads, sync, /*record_timeline=*/true);
  run_to_completion(simulators, sync);
  const RankResult result = simulators.front().result();
  EXPECT_DOUBLE_EQ(result.cpu_us, 400);
  bool found = false;
  for (const auto& entry : result.timeline) {
    if (entry.name == "k_b") {
      EXPECT_DOUBLE_EQ(entry.start_us, 130);  // launched at its recorded offset, not after 400
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace perfsim::engine
