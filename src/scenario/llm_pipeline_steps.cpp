#include "scenario/llm_pipeline_steps.hpp"

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "generators/llm/llm_pipeline_schedule.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

using StepKind = PipelineStepRuns::StepKind;
using Run = PipelineStepRuns::Run;

// Phases the generator gives the ops of a forward step (the loss and an overlapped parameter
// gather run inside it) and of a backward step (recomputation runs inside it).
StepKind kind_of_phase(const std::string& phase) {
  if (phase == "forward" || phase == "loss" || phase == "param-gather")
    return StepKind::kForward;
  if (phase == "backward" || phase == "recompute")
    return StepKind::kBackward;
  return StepKind::kNone;
}

struct OpLabel {
  std::string phase;
  int micro_batch = -1;
};

OpLabel label_of(const Op& op) {
  OpLabel label;
  if (const Attribute* phase = op.find_attribute("phase"))
    if (const auto* text = std::get_if<std::string>(&phase->value))
      label.phase = *text;
  if (const Attribute* micro_batch = op.find_attribute("micro_batch"))
    if (const auto* value = std::get_if<std::int64_t>(&micro_batch->value))
      label.micro_batch = static_cast<int>(*value);
  return label;
}

}  // namespace

// Maximal runs of ops of one step kind and micro-batch. Ops outside any micro-batch (a
// gradient bucket reduced under the backward) neither join nor end a run; transfers (phase
// send-/recv-, micro-batch set) end one.
void PipelineStepRuns::add(const Op& op, std::size_t position) {
  const OpLabel label = label_of(op);
  if (label.micro_batch < 0)
    return;
  const StepKind kind = kind_of_phase(label.phase);
  if (kind == StepKind::kNone) {
    open_ = false;
    return;
  }
  if (open_ && runs_.back().kind == kind && runs_.back().micro_batch == label.micro_batch) {
    runs_.back().end_op = position + 1;
    return;
  }
  runs_.push_back({kind, label.micro_batch, position, position + 1});
  open_ = true;
}

void mark_pipeline_steps(const Trace& trace, const llm::TransformerConfig& model,
                         const llm::ParallelConfig& parallel, int stage,
                         engine::RankProgram& program) {
  PipelineStepRuns runs;
  for (std::size_t position = 0; position < program.ops.size(); ++position)
    runs.add(trace.ops.at(program.ops.trace_position(position)), position);
  runs.mark(model, parallel, stage, program);
}

void PipelineStepRuns::mark(const llm::TransformerConfig& model,
                            const llm::ParallelConfig& parallel, int stage,
                            engine::RankProgram& program) const {
  program.steps.clear();
  const int micro_batches = llm::micro_batches_per_iteration(model, parallel);
  const std::vector<llm::PipelineStep> schedule =
      parallel.virtual_stages > 1
          ? llm::interleaved_schedule(stage, parallel.pp, parallel.virtual_stages, micro_batches)
          : llm::one_f_one_b_schedule(stage, parallel.pp, micro_batches);
  const std::vector<Run>& runs = runs_;
  std::vector<engine::ProgramStep> steps;
  std::size_t next_run = 0;
  for (const llm::PipelineStep& step : schedule) {
    const bool forward = step.action == llm::PipelineAction::kForward;
    if (!forward && step.action != llm::PipelineAction::kBackward)
      continue;
    if (next_run == runs.size())
      return;
    const Run& run = runs[next_run++];
    if (run.kind != (forward ? StepKind::kForward : StepKind::kBackward) ||
        run.micro_batch != step.micro_batch)
      return;
    engine::ProgramStep marked;
    marked.first_op = run.first_op;
    marked.end_op = run.end_op;
    marked.label.phase = forward ? "forward" : "backward";
    marked.label.micro_batch = step.micro_batch;
    marked.label.chunk = step.chunk;
    steps.push_back(std::move(marked));
  }
  if (next_run == runs.size())
    program.steps = std::move(steps);
}

}  // namespace perfsim::scenario
