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

std::vector<PipelineStep> interleaved_schedule(int stage, int stages, int chunks, int micro_batches,
                                               bool a2a_overlap) {
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
  const int warmup =
      std::min((stages - stage - 1) * 2 + (chunks - 1) * stages + (a2a_overlap ? 1 : 0), total);
  for (int k = 0; k < warmup; ++k)
    forward(k);
  for (int i = 0; i < total - warmup; ++i) {
    if (!a2a_overlap) {
      forward(warmup + i);
      backward(i);
      continue;
    }
    const int k = warmup + i;
    const int f_chunk = forward_chunk(k), f_mb = micro_batch_of(k);
    const int b_chunk = backward_chunk(i), b_mb = micro_batch_of(i);
    if (!first_virtual(f_chunk))
      steps.push_back({PipelineAction::kRecvForward, f_mb, f_chunk});
    if (!last_virtual(b_chunk))
      steps.push_back({PipelineAction::kRecvBackward, b_mb, b_chunk});
    steps.push_back({PipelineAction::kForward, f_mb, f_chunk, true});
    steps.push_back({PipelineAction::kBackward, b_mb, b_chunk});
    if (!last_virtual(f_chunk))
      steps.push_back({PipelineAction::kSendForward, f_mb, f_chunk});
    if (!first_virtual(b_chunk))
      steps.push_back({PipelineAction::kSendBackward, b_mb, b_chunk});
  }
  for (int i = total - warmup; i < total; ++i)
    backward(i);
  return steps;
}

std::vector<PipelineStep> combined_no_pipelining_schedule(int micro_batches) {
  std::vector<PipelineStep> steps;
  if (micro_batches <= 0)
    return steps;
  steps.push_back({PipelineAction::kForward, 0});
  for (int i = 0; i + 1 < micro_batches; ++i) {
    steps.push_back({PipelineAction::kForward, i + 1, 0, true});
    steps.push_back({PipelineAction::kBackward, i});
  }
  steps.push_back({PipelineAction::kBackward, micro_batches - 1});
  return steps;
}

std::vector<PipelineStep> batched_interleaved_schedule(int stage, int stages, int chunks,
                                                       int micro_batches) {
  const int total = micro_batches * chunks;
  const int group = stages * chunks;
  const bool first_stage = stage == 0, last_stage = stage == stages - 1;
  auto micro_batch_of = [&](int k) { return (k / group) * stages + k % stages; };
  // Megatron's get_model_chunk_id, also for the negative steps its last stage asks about
  // (Python's modulo).
  auto forward_chunk = [&](int k) { return (((k % group) + group) % group) / stages; };
  auto backward_chunk = [&](int k) { return chunks - 1 - forward_chunk(k); };
  // The micro-batches of each chunk's forwards (backwards) in the order the rank runs them, and
  // how many received tensors each chunk's queue has handed out.
  std::vector<std::vector<int>> forwards_of(static_cast<std::size_t>(chunks)),
      backwards_of(static_cast<std::size_t>(chunks));
  for (int k = 0; k < total; ++k) {
    forwards_of[static_cast<std::size_t>(forward_chunk(k))].push_back(micro_batch_of(k));
    backwards_of[static_cast<std::size_t>(backward_chunk(k))].push_back(micro_batch_of(k));
  }
  std::vector<std::size_t> forward_received(static_cast<std::size_t>(chunks), 0),
      backward_received(static_cast<std::size_t>(chunks), 0);
  std::vector<PipelineStep> steps;
  auto receive_forward = [&](int chunk) {
    const auto c = static_cast<std::size_t>(chunk);
    steps.push_back(
        {PipelineAction::kRecvForward, forwards_of[c].at(forward_received[c]++), chunk});
  };
  auto receive_backward = [&](int chunk) {
    const auto c = static_cast<std::size_t>(chunk);
    steps.push_back(
        {PipelineAction::kRecvBackward, backwards_of[c].at(backward_received[c]++), chunk});
  };
  auto forward = [&](int k) {
    steps.push_back({PipelineAction::kForward, micro_batch_of(k), forward_chunk(k)});
  };
  auto backward = [&](int k) {
    steps.push_back({PipelineAction::kBackward, micro_batch_of(k), backward_chunk(k)});
  };
  auto send_forward = [&](int k) {  // not from the last virtual stage
    if (!(last_stage && forward_chunk(k) == chunks - 1))
      steps.push_back({PipelineAction::kSendForward, micro_batch_of(k), forward_chunk(k)});
  };
  auto send_backward = [&](int k) {  // not from the first virtual stage
    if (!(first_stage && backward_chunk(k) == 0))
      steps.push_back({PipelineAction::kSendBackward, micro_batch_of(k), backward_chunk(k)});
  };
  const int warmup = std::min((stages - stage - 1) * 2 + (chunks - 1) * stages, total);
  const int remaining = total - warmup;
  if (!first_stage)
    receive_forward(0);
  for (int k = 0; k < warmup; ++k) {
    forward(k);
    send_forward(k);
    const int next_chunk = forward_chunk(k + 1);
    if (k + 1 < total && !(first_stage && next_chunk == 0))
      receive_forward(next_chunk);
    if (k == warmup - 1 && remaining > 0 && !last_stage)
      receive_backward(backward_chunk(0));
  }
  for (int i = 0; i < remaining; ++i) {
    const int forward_k = warmup + i;
    forward(forward_k);
    backward(i);
    send_forward(forward_k);
    send_backward(i);
    if (i + 1 < remaining) {
      if (first_stage) {  // what the last stage sends in this exchange, P - 1 steps behind
        const int chunk = forward_chunk(forward_k - (stages - 1));
        if (chunk != chunks - 1)
          receive_forward(chunk + 1);
      } else {
        receive_forward(forward_chunk(forward_k + 1));
      }
    }
    if (last_stage) {  // what the first stage sends, P - 1 steps behind
      const int chunk = backward_chunk(i - (stages - 1));
      if (chunk != 0)
        receive_backward(chunk - 1);
    } else {
      receive_backward(backward_chunk(i + 1));
    }
  }
  if (remaining == 0 && !last_stage)
    receive_backward(backward_chunk(0));
  for (int k = remaining; k < total; ++k) {
    backward(k);
    send_backward(k);
    const int next_chunk = backward_chunk(k + 1);
    if (k + 1 < total && !(last_stage && next_chunk == chunks - 1))
      receive_backward(next_chunk);
  }
  return steps;
}

std::vector<PipelineStep> receives_one_step_ahead(const std::vector<PipelineStep>& steps) {
  std::vector<PipelineStep> out;
  out.reserve(steps.size());
  // Where the next receive of each direction goes: after the last forward (backward) step and
  // the send that follows it; npos until the first one.
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t after_forward = kNone, after_backward = kNone;
  bool in_combined = false;  // between a combined forward and its backward
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
        in_combined = step.combined;
        if (!in_combined)
          after_forward = out.size();
        break;
      case PipelineAction::kBackward:
      case PipelineAction::kSendBackward:
        out.push_back(step);
        if (in_combined && step.action == PipelineAction::kBackward) {
          after_forward = out.size();
          in_combined = false;
        }
        after_backward = out.size();
        break;
    }
  }
  return out;
}

}  // namespace perfsim::generators::llm
