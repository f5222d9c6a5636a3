#include "generators/llm/llm_pipeline_schedule.hpp"

#include <algorithm>

namespace perfsim::generators::llm {

std::string_view pipeline_action_name(PipelineAction action) {
  switch (action) {
    case PipelineAction::kRecvForward:
      return "recv-forward";
    case PipelineAction::kForward:
      return "forward";
    case PipelineAction::kSendForward:
      return "send-forward";
    case PipelineAction::kRecvBackward:
      return "recv-backward";
    case PipelineAction::kBackward:
      return "backward";
    case PipelineAction::kSendBackward:
      return "send-backward";
  }
  return "forward";
}

std::vector<PipelineStep> one_f_one_b_schedule(int stage, int stages, int micro_batches) {
  const bool first = stage == 0;
  const bool last = stage == stages - 1;
  std::vector<PipelineStep> steps;
  auto add = [&](PipelineAction action, int micro_batch) {
    const bool skipped =
        (first &&
         (action == PipelineAction::kRecvForward || action == PipelineAction::kSendBackward)) ||
        (last &&
         (action == PipelineAction::kSendForward || action == PipelineAction::kRecvBackward));
    if (!skipped)
      steps.push_back({action, micro_batch});
  };
  const int warmup = std::min(stages - stage - 1, micro_batches);
  const int steady = micro_batches - warmup;
  for (int i = 0; i < warmup; ++i) {
    add(PipelineAction::kRecvForward, i);
    add(PipelineAction::kForward, i);
    add(PipelineAction::kSendForward, i);
  }
  if (steady > 0)
    add(PipelineAction::kRecvForward, warmup);
  for (int i = 0; i < steady; ++i) {
    const int forward = warmup + i;
    add(PipelineAction::kForward, forward);
    add(PipelineAction::kSendForward, forward);  // batched with the receive below
    add(PipelineAction::kRecvBackward, i);
    add(PipelineAction::kBackward, i);
    add(PipelineAction::kSendBackward, i);
    if (i + 1 < steady)
      add(PipelineAction::kRecvForward, forward + 1);
  }
  for (int i = steady; i < micro_batches; ++i) {
    add(PipelineAction::kRecvBackward, i);
    add(PipelineAction::kBackward, i);
    add(PipelineAction::kSendBackward, i);
  }
  return steps;
}

std::vector<PipelineStep> interleaved_schedule(int stage, int stages, int chunks,
                                               int micro_batches) {
  const int total = micro_batches * chunks;
  const int group = stages * chunks;
  auto micro_batch_of = [&](int k) { return (k / group) * stages + k % stages; };
  auto forward_chunk = [&](int k) { return (k / stages) % chunks; };
  auto backward_chunk = [&](int k) { return chunks - 1 - (k / stages) % chunks; };
  auto first_virtual = [&](int chunk) { return stage == 0 && chunk == 0; };
  auto last_virtual = [&](int chunk) { return stage == stages - 1 && chunk == chunks - 1; };
  std::vector<PipelineStep> steps;
  auto forward = [&](int k) {
    const int chunk = forward_chunk(k), mb = micro_batch_of(k);
    if (!first_virtual(chunk))
      steps.push_back({PipelineAction::kRecvForward, mb, chunk});
    steps.push_back({PipelineAction::kForward, mb, chunk});
    if (!last_virtual(chunk))
      steps.push_back({PipelineAction::kSendForward, mb, chunk});
  };
  auto backward = [&](int k) {
    const int chunk = backward_chunk(k), mb = micro_batch_of(k);
    if (!last_virtual(chunk))
      steps.push_back({PipelineAction::kRecvBackward, mb, chunk});
    steps.push_back({PipelineAction::kBackward, mb, chunk});
    if (!first_virtual(chunk))
      steps.push_back({PipelineAction::kSendBackward, mb, chunk});
  };
  const int warmup = std::min((stages - stage - 1) * 2 + (chunks - 1) * stages, total);
  for (int k = 0; k < warmup; ++k)
    forward(k);
  for (int i = 0; i < total - warmup; ++i) {
    forward(warmup + i);
    backward(i);
  }
  for (int i = total - warmup; i < total; ++i)
    backward(i);
  return steps;
}

std::vector<PipelineStep> receives_one_step_ahead(const std::vector<PipelineStep>& steps) {
  std::vector<PipelineStep> out;
  out.reserve(steps.size());
  // Where the next receive of each direction goes: after the last forward (backward) step and
  // the send that follows it; npos until the first one.
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t after_forward = kNone, after_backward = kNone;
  auto insert_at = [&](std::size_t position, const PipelineStep& step) {
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(position), step);
    for (std::size_t* other : {&after_forward, &after_backward})
      if (*other != kNone && *other >= position)
        ++*other;
  };
  for (const PipelineStep& step : steps) {
    switch (step.action) {
      case PipelineAction::kRecvForward:
        if (after_forward == kNone)
          out.push_back(step);
        else
          insert_at(after_forward, step);
        break;
      case PipelineAction::kRecvBackward:
        if (after_backward == kNone)
          out.push_back(step);
        else
          insert_at(after_backward, step);
        break;
      case PipelineAction::kForward:
      case PipelineAction::kSendForward:
        out.push_back(step);
        after_forward = out.size();
        break;
      case PipelineAction::kBackward:
      case PipelineAction::kSendBackward:
        out.push_back(step);
        after_backward = out.size();
        break;
    }
  }
  return out;
}

}  // namespace perfsim::generators::llm
