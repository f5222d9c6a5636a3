// Megatron-LM's interleaved schedule without overlap_p2p_comm (batched_interleaved_schedule):
// one batched exchange after each compute step, followed by a synchronize. Checked on the step
// lists of every stage: each stage computes what interleaved_schedule computes, every received
// tensor is read by a later step, the n-th tensor a stage sends to a neighbour is the one the
// neighbour's n-th receive expects (same micro-batch, the next virtual stage), and exchanges are
// separated by compute. Then generated traces of such a layout run through the engine to the
// end (the synchronizes do not deadlock) and the batched run is no faster than the overlapped.
#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <vector>

#include "generators/llm/llm_pipeline_schedule.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "support/generated_llm_iteration.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

bool is_transfer(PipelineAction action) {
  return action == PipelineAction::kRecvForward || action == PipelineAction::kSendForward ||
         action == PipelineAction::kRecvBackward || action == PipelineAction::kSendBackward;
}

bool is_compute(PipelineAction action) {
  return action == PipelineAction::kForward || action == PipelineAction::kBackward;
}

using Label = std::tuple<int, int>;  // (virtual stage, micro-batch)

void expect_consistent(int stages, int chunks, int micro_batches) {
  SCOPED_TRACE("P " + std::to_string(stages) + " V " + std::to_string(chunks) + " m " +
               std::to_string(micro_batches));
  std::vector<std::vector<PipelineStep>> batched(static_cast<std::size_t>(stages));
  for (int stage = 0; stage < stages; ++stage) {
    const std::vector<PipelineStep> steps =
        batched_interleaved_schedule(stage, stages, chunks, micro_batches);
    batched[static_cast<std::size_t>(stage)] = steps;
    // The same compute steps, in the same order, as the unbatched schedule.
    std::vector<std::tuple<PipelineAction, int, int>> computed, expected;
    for (const PipelineStep& step : steps)
      if (is_compute(step.action))
        computed.emplace_back(step.action, step.chunk, step.micro_batch);
    for (const PipelineStep& step : interleaved_schedule(stage, stages, chunks, micro_batches))
      if (is_compute(step.action))
        expected.emplace_back(step.action, step.chunk, step.micro_batch);
    EXPECT_EQ(computed, expected) << "stage " << stage;
    // Every forward but the first virtual stage's reads a tensor received before it; every
    // backward but the last virtual stage's a gradient received before it.
    std::map<std::tuple<PipelineAction, int, int>, int> received;
    for (const PipelineStep& step : steps) {
      const std::tuple<PipelineAction, int, int> key{step.action, step.chunk, step.micro_batch};
      if (step.action == PipelineAction::kRecvForward ||
          step.action == PipelineAction::kRecvBackward)
        ++received[key];
      const int virtual_stage = step.chunk * stages + stage;
      const std::tuple<PipelineAction, int, int> forward_input{PipelineAction::kRecvForward,
                                                               step.chunk, step.micro_batch};
      const std::tuple<PipelineAction, int, int> backward_input{PipelineAction::kRecvBackward,
                                                                step.chunk, step.micro_batch};
      if (step.action == PipelineAction::kForward && virtual_stage > 0) {
        EXPECT_EQ(received[forward_input], 1)
            << "stage " << stage << " forward chunk " << step.chunk << " mb " << step.micro_batch;
      }
      if (step.action == PipelineAction::kBackward && virtual_stage < stages * chunks - 1) {
        EXPECT_EQ(received[backward_input], 1)
            << "stage " << stage << " backward chunk " << step.chunk << " mb " << step.micro_batch;
      }
    }
    // Exchanges (runs of transfers) are separated by compute: at most one per compute step.
    for (std::size_t i = 1; i < steps.size(); ++i) {
      if (is_transfer(steps[i].action) && !is_transfer(steps[i - 1].action)) {
        EXPECT_TRUE(is_compute(steps[i - 1].action));
      }
    }
  }
  // Pairing by order, as NCCL and the engine pair point-to-point messages per rank pair.
  for (int stage = 0; stage < stages; ++stage) {
    const int next = (stage + 1) % stages;
    std::vector<Label> sent_forward, received_forward, sent_backward, received_backward;
    for (const PipelineStep& step : batched[static_cast<std::size_t>(stage)]) {
      if (step.action == PipelineAction::kSendForward)
        sent_forward.emplace_back(step.chunk * stages + stage + 1, step.micro_batch);
      if (step.action == PipelineAction::kRecvBackward)
        received_backward.emplace_back(step.chunk * stages + stage, step.micro_batch);
    }
    for (const PipelineStep& step : batched[static_cast<std::size_t>(next)]) {
      if (step.action == PipelineAction::kRecvForward)
        received_forward.emplace_back(step.chunk * stages + next, step.micro_batch);
      if (step.action == PipelineAction::kSendBackward)
        sent_backward.emplace_back(step.chunk * stages + next - 1, step.micro_batch);
    }
    EXPECT_EQ(sent_forward, received_forward) << stage << " -> " << next;
    EXPECT_EQ(sent_backward, received_backward) << next << " -> " << stage;
  }
}

TEST(BatchedInterleavedSchedule, ExchangesPairAcrossStagesAndFeedTheirReaders) {
  for (int stages : {3, 4})
    for (int chunks : {2, 3})
      for (int multiple : {1, 2, 3})
        expect_consistent(stages, chunks, stages * multiple);
}

class UnitKernels final : public KernelDurationSource {
 public:
  DurationUs kernel_duration_us(const Op& op, const Kernel&) const override {
    return op.comm ? 0 : 1;
  }
  std::string_view name() const override { return "unit"; }
};

class UnitCollectives final : public CommDurationSource {
 public:
  DurationUs collective_duration_us(const CollectiveCall&) const override { return 5; }
  std::string_view name() const override { return "unit"; }
};

TimestampUs iteration_us(const TransformerConfig& model, const ParallelConfig& parallel) {
  UnitKernels kernels;
  UnitCollectives collectives;
  return test_support::slowest_generated_iteration_us(model, parallel, {&kernels, &collectives, {}},
                                                      HostOverheads{});
}

TEST(BatchedInterleavedSchedule, GeneratedRanksRunToTheEndAndWaitOnTheirExchanges) {
  const TransformerConfig model = test_support::tiny_gpt();  // 8 layers, 16 micro-batches
  ParallelConfig parallel{.tp = 1, .pp = 4, .dp = 1, .virtual_stages = 2};
  parallel.overlap_p2p_comm = false;
  const TimestampUs batched = iteration_us(model, parallel);
  parallel.overlap_p2p_comm = true;
  const TimestampUs overlapped = iteration_us(model, parallel);
  EXPECT_GT(batched, 0);
  // Each exchange is waited for before the next step starts: never faster than overlapping.
  EXPECT_GT(batched, overlapped);
}

}  // namespace
}  // namespace perfsim::generators::llm
