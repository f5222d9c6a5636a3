// Megatron-LM 2020-2022's forward-compute / backward-compute timers (ParallelConfig::timer_syncs):
// a torch.cuda.synchronize() at the start and the stop of every micro-batch's forward and
// backward step. Checked on generated traces (exact counts per rank, each step bracketed by
// two synchronizes, with and without pipelining and interleaving) and through the engine: the
// syncs cost nothing while the host keeps ahead of the GPU, and expose a host-bound stretch
// (get_batch's CPU time) that the host otherwise runs while the GPU works.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "support/free_collectives.hpp"
#include "support/generated_llm_iteration.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

constexpr std::string_view kSynchronize = "torch.cuda.synchronize";

// Which step an op belongs to: 'F' forward (the loss included), 'B' backward (recomputation
// included), 0 outside both (transfers, gradient sync, optimizer).
char step_of(const Op& op) {
  const std::string phase = op_phase(op);
  if (phase == "forward" || phase == "loss")
    return 'F';
  if (phase == "backward" || phase == "recompute")
    return 'B';
  return 0;
}

int synchronizes(const Trace& trace) {
  int count = 0;
  for (const Op& op : trace.ops)
    count += op.name == kSynchronize;
  return count;
}

// Every run of ops inside one forward or backward step starts and ends with a synchronize.
// Returns the number of runs (steps).
int expect_steps_bracketed(const Trace& trace) {
  int runs = 0;
  const Op* first = nullptr;
  const Op* last = nullptr;
  auto close = [&] {
    if (!first)
      return;
    ++runs;
    EXPECT_EQ(first->name, kSynchronize) << "rank " << trace.rank << " op " << first->id;
    EXPECT_EQ(last->name, kSynchronize) << "rank " << trace.rank << " op " << last->id;
    first = last = nullptr;
  };
  for (const Op& op : trace.ops) {
    if (op.is_annotation)
      continue;
    const char step = step_of(op);
    if (step == 0) {
      close();
      continue;
    }
    // A new step: the other direction, or a synchronize right after the previous step's
    // closing one (two steps of one direction back to back).
    if (first && (step != step_of(*first) ||
                  (op.name == kSynchronize && last->name == kSynchronize && last != first)))
      close();
    if (!first)
      first = &op;
    last = &op;
  }
  close();
  return runs;
}

struct Layout {
  const char* name;
  ParallelConfig parallel;
};

TEST(LlmTimerSyncs, FourSynchronizesPerMicroBatchAndChunkOnEveryRank) {
  const TransformerConfig model = test_support::tiny_gpt();  // 8 layers, 32 sequences
  ParallelConfig interleaved{.tp = 1, .pp = 4, .dp = 1, .virtual_stages = 2};
  ParallelConfig batched = interleaved;
  batched.overlap_p2p_comm = false;  // batched exchanges, each synchronized (batch_p2p_sync)
  for (const Layout& layout :
       {Layout{"no PP", ParallelConfig{.tp = 2, .pp = 1, .dp = 2}},
        Layout{"1F1B", ParallelConfig{.tp = 1, .pp = 2, .dp = 2}},
        Layout{"interleaved", interleaved}, Layout{"interleaved, batched p2p", batched}}) {
    SCOPED_TRACE(layout.name);
    ParallelConfig with = layout.parallel;
    with.timer_syncs = true;
    const int steps_per_direction =
        micro_batches_per_iteration(model, layout.parallel) * layout.parallel.virtual_stages;
    ASSERT_GT(steps_per_direction, 1);
    for (int rank = 0; rank < layout.parallel.world_size(); ++rank) {
      const Trace without_trace = generate_llm_rank(model, layout.parallel, rank);
      const Trace with_trace = generate_llm_rank(model, with, rank);
      // A start and a stop per forward and per backward step; nothing else moves.
      EXPECT_EQ(synchronizes(with_trace) - synchronizes(without_trace), 4 * steps_per_direction)
          << "rank " << rank;
      EXPECT_EQ(with_trace.ops.size() - without_trace.ops.size(),
                static_cast<std::size_t>(4 * steps_per_direction));
      if (layout.parallel.pp == 1) {
        EXPECT_EQ(synchronizes(without_trace), 0);  // no pipeline exchange to synchronize
      }
      EXPECT_EQ(expect_steps_bracketed(with_trace), 2 * steps_per_direction) << "rank " << rank;
    }
  }
}

class LayerGemms final : public KernelDurationSource {
 public:
  explicit LayerGemms(DurationUs us) : us_(us) {}
  DurationUs kernel_duration_us(const Op& op, const Kernel& kernel) const override {
    return kernel.category == KernelCategory::kGemm && op.find_attribute("layer") ? us_ : 0;
  }
  std::string_view name() const override { return "layer gemms"; }

 private:
  DurationUs us_;
};

using test_support::FreeCollectives;

TimestampUs iteration_us(const TransformerConfig& model, const ParallelConfig& parallel,
                         HostOverheads overheads) {
  LayerGemms kernels(10);
  FreeCollectives collectives;
  overheads.launch.kernel_gap_us = 0;
  return test_support::slowest_generated_iteration_us(model, parallel, {&kernels, &collectives, {}},
                                                      overheads);
}

TEST(LlmTimerSyncs, ExposeAHostBoundStretchBeforeAGpuBoundStep) {
  const TransformerConfig model = test_support::tiny_gpt();
  ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 1};
  const int micro_batches = micro_batches_per_iteration(model, parallel);
  ASSERT_EQ(micro_batches, 16);
  // GPU-bound steps: 8 layers x (4 forward + 8 backward) GEMMs of 10 us per micro-batch; a free
  // host except get_batch's 300 us of CPU (host-bound: no kernel).
  const DurationUs load_us = 300;
  HostOverheads overheads;
  overheads.per_op[std::string(kLoadBatchOpName)].t5 = {load_us, 0.0, 1};

  const TimestampUs free_host = iteration_us(model, parallel, {});
  parallel.timer_syncs = true;
  // A host that is never behind loses nothing at a synchronize.
  EXPECT_DOUBLE_EQ(iteration_us(model, parallel, {}), free_host);

  parallel.timer_syncs = false;
  const TimestampUs without = iteration_us(model, parallel, overheads);
  parallel.timer_syncs = true;
  const TimestampUs with = iteration_us(model, parallel, overheads);
  // Without the syncs the host loads micro-batch i + 1 while the GPU runs micro-batch i: only
  // the first load is exposed. With them the GPU has drained before every load.
  EXPECT_NEAR(without - free_host, load_us, 1e-6);
  EXPECT_NEAR(with - without, (micro_batches - 1) * load_us, 1e-6);
}

}  // namespace
}  // namespace perfsim::generators::llm
