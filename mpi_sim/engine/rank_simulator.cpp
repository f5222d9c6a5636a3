#include "mpi_sim/engine/rank_simulator.hpp"

#include <algorithm>
#include <limits>

#include "perfsim/error.hpp"

namespace perfsim::engine {
namespace {

std::size_t category_index(KernelCategory category) {
  return static_cast<std::size_t>(category);
}

std::string collective_key(const std::string& group, std::size_t index) {
  return (group.empty() ? std::string("world") : group) + "#" + std::to_string(index);
}

// The CPU clock never goes back and a kernel never starts before its launch call: the
// overheads that move it are all non-negative.
bool cpu_clock_monotonic(const HostOverheads& overheads) {
  auto non_negative = [](const OpOverheads& op) {
    return op.t1.mean_us >= 0 && op.t2.mean_us >= 0 && op.t3.mean_us >= 0 && op.t5.mean_us >= 0;
  };
  if (!non_negative(overheads.all_ops) || overheads.t4_all.mean_us < 0 ||
      overheads.launch.launch_fraction_of_t4 < 0)
    return false;
  for (const auto& [name, op] : overheads.per_op) {
    if (!non_negative(op))
      return false;
  }
  for (const auto& [name, t4] : overheads.t4_per_runtime) {
    if (t4.mean_us < 0)
      return false;
  }
  return true;
}

}  // namespace

RankSimulator::RankSimulator(const RankProgram& program, const HostOverheads& overheads,
                             ClockSync& sync, bool record_timeline)
    : program_(program), overheads_(overheads), sync_(sync), record_timeline_(record_timeline) {
  result_.sim_rank = program.sim_rank;
  cpu_us_ = program.start_us;
  recorded_previous_start_us_ = program.start_us;
  result_.steps.reserve(program.steps.size());
  for (const ProgramStep& step : program.steps)
    result_.steps.push_back(step.label);
  sweep_early_ = cpu_clock_monotonic(overheads) &&
                 std::none_of(program.ops.begin(), program.ops.end(),
                              [](const SimOp& op) { return op.recorded_host != nullptr; });
  share_links_ = program.link_sharing != nullptr;
  if (share_links_)
    link_occupancy_ = std::make_unique<LinkOccupancy>();
  // Every kernel adds a busy interval and the sweep keeps fewer than 2 x kMinSweep: sized once
  // rather than doubled past what a short program (40 synthetic ops) ever holds.
  if (sweep_early_)
    busy_intervals_.reserve(std::min(program.coverage.kernels, 2 * kMinSweep));
}

DurationUs RankSimulator::posted_duration_us(const RankCollective& collective,
                                             TimestampUs ready_us) {
  // A measured duration (kShortest) already holds whatever sharing the profiled run saw.
  if (!share_links_ || collective.shared.combine != DurationCombine::kLongest)
    return collective.duration_us;
  const LinkDemand demand =
      program_.link_sharing->demand(collective.shared.comm, collective.members);
  if (!demand.uses_links())
    return collective.duration_us;
  const DurationUs latency_us = collective.duration_us * demand.latency_fraction;
  // A collective is ready no earlier than the compute stream's clock, which never goes back:
  // later transfers arrive after it (the CPU clock lags the GPU by the launch queue, up to
  // 1024 kernels, and would keep every transfer of that stretch on the books). Should the
  // compute stream change to one that is behind, LinkOccupancy clamps the arrival: the result
  // stays deterministic.
  const TimestampUs horizon_us =
      std::min(ready_us, std::max(cpu_us_, stream_state(compute_stream_).clock_us));
  return latency_us +
         link_occupancy_->share(demand, ready_us, collective.duration_us - latency_us, horizon_us);
}

void RankSimulator::sweep_busy(TimestampUs bound) {
  std::sort(busy_intervals_.begin(), busy_intervals_.end());
  auto swept = busy_intervals_.begin();
  for (; swept != busy_intervals_.end() && swept->first < bound; ++swept) {
    const auto& [start, end] = *swept;
    const TimestampUs from = std::max(start, busy_covered_until_us_);
    if (end > from)
      busy_swept_us_ += end - from;
    busy_covered_until_us_ = std::max(busy_covered_until_us_, end);
  }
  busy_intervals_.erase(busy_intervals_.begin(), swept);
  // What the sweep left is usually far less than it took: keep no more room than twice that,
  // as a deque would not (every rank holding its largest window at once would).
  if (busy_intervals_.capacity() > 2 * busy_intervals_.size() + 64)
    busy_intervals_.shrink_to_fit();
  next_sweep_size_ = std::max(kMinSweep, 2 * busy_intervals_.size());
}

void RankSimulator::note_step_kernel(TimestampUs start_us, TimestampUs end_us) {
  const std::vector<ProgramStep>& steps = program_.steps;
  while (step_cursor_ < steps.size() && steps[step_cursor_].end_op <= next_op_)
    ++step_cursor_;
  if (step_cursor_ == steps.size() || steps[step_cursor_].first_op > next_op_)
    return;
  StepSpan& span = result_.steps[step_cursor_];
  span.start_us = span.end_us < 0 ? start_us : std::min(span.start_us, start_us);
  span.end_us = std::max(span.end_us, end_us);
}

RankSimulator::StreamState& RankSimulator::stream_state(StreamId id) {
  auto [it, inserted] = streams_.try_emplace(id);
  if (inserted)
    it->second.clock_us = program_.start_us;
  return it->second;
}

const SimKernel& RankSimulator::slot_of(const Posted& posted) {
  for (const SimKernel& kernel : posted.op->kernels) {
    if (kernel.is_collective)
      return kernel;
  }
  throw RuntimeFailure("rank simulator: a posted collective's op has no collective slot");
}

bool RankSimulator::resolved(std::size_t posted_index) {
  Posted& posted = posted_[posted_index];
  if (posted.has_timing())
    return true;
  const std::optional<CollectiveTiming> polled = sync_.poll(posted.handle);
  if (!polled)
    return false;
  posted.timing = *polled;
  ++resolved_count_;
  const CollectiveTiming timing = *polled;
  StreamState& stream = stream_state(slot_of(posted).stream);
  if (stream.pending == posted_index) {
    stream.clock_us = std::max(stream.clock_us, timing.end_us);
    stream.pending.reset();
  }
  flush_busy();
  return true;
}

void RankSimulator::add_kernel_busy(const SimKernel& kernel, TimestampUs start_us) {
  if (pending_busy_.empty())
    add_busy(kernel.stream, start_us, kernel.duration_us, kernel.category, kernel.name, "");
  else
    pending_busy_.push_back({&kernel, start_us, kNotPosted});
}

void RankSimulator::flush_busy() {
  while (!pending_busy_.empty()) {
    const PendingBusy& front = pending_busy_.front();
    if (front.posted == kNotPosted) {
      const SimKernel& kernel = *front.kernel;
      add_busy(kernel.stream, front.start_us, kernel.duration_us, kernel.category, kernel.name, "");
    } else {
      const Posted& posted = posted_[front.posted];
      if (!posted.has_timing())
        return;
      const CollectiveTiming timing = posted.timing;
      const RankCollective collective = program_.collective_of(*posted.op);
      const SimKernel& slot = slot_of(posted);
      add_busy(slot.stream, timing.start_us, timing.end_us - timing.start_us,
               KernelCategory::kCommunication, slot.name,
               record_timeline_ ? collective_key(collective.group, collective.index_in_group) : "");
      result_.groups[collective.group].time_us += timing.end_us - timing.start_us;
    }
    pending_busy_.pop_front();
  }
}

std::optional<std::size_t> RankSimulator::waited_collective(const SimOp& op) const {
  if (!op.waits_for_communication)
    return std::nullopt;
  if (op.waits_for_seq) {
    if (auto it = posted_by_seq_.find(*op.waits_for_seq); it != posted_by_seq_.end())
      return it->second;
  }
  return last_collective_;
}

std::size_t RankSimulator::first_unresolved() const {
  while (first_unresolved_ < posted_.size() && posted_[first_unresolved_].has_timing())
    ++first_unresolved_;
  return first_unresolved_;
}

std::vector<std::size_t> RankSimulator::requirements(const SimOp& op) const {
  std::vector<std::size_t> needed;
  if (std::optional<std::size_t> waited = waited_collective(op))
    needed.push_back(*waited);
  for (std::int64_t tensor : op.consumed_tensor_ids) {
    if (auto producer = tensor_producer_.find(tensor); producer != tensor_producer_.end()) {
      needed.push_back(producer->second);
    }
  }
  if (op.host_sync == HostSync::kDevice) {
    // The host waits for every stream, communication included.
    for (std::size_t index = first_unresolved(); index < posted_.size(); ++index) {
      if (!posted_[index].has_timing())
        needed.push_back(index);
    }
  }
  for (const SimKernel& kernel : op.kernels) {
    if (auto stream = streams_.find(kernel.stream);
        stream != streams_.end() && stream->second.pending) {
      needed.push_back(*stream->second.pending);
    }
  }
  return needed;
}

void RankSimulator::wait_on_stream(StreamId stream_id, std::size_t posted_index) {
  const Posted& posted = posted_[posted_index];
  StreamState& stream = stream_state(stream_id);
  const TimestampUs end = posted.timing.end_us;
  if (end > stream.clock_us) {
    GroupTraffic& traffic = result_.groups[program_.collective_of(*posted.op).group];
    traffic.exposed_us += end - stream.clock_us;
    traffic.exposed_before_start_us +=
        std::clamp(posted.timing.start_us - stream.clock_us, 0.0, end - stream.clock_us);
    stream.clock_us = end;
  }
}

void RankSimulator::add_busy(StreamId stream_id, TimestampUs start_us, DurationUs duration_us,
                             KernelCategory category, std::string_view name,
                             const std::string& key) {
  StreamState& stream = stream_state(stream_id);
  stream.busy_us += duration_us;
  stream.by_category_us[category_index(category)] += duration_us;
  result_.by_category_us[category_index(category)] += duration_us;
  result_.kernel_time_us += duration_us;
  busy_intervals_.emplace_back(start_us, start_us + duration_us);
  if (sweep_early_ && busy_intervals_.size() >= next_sweep_size_)
    sweep_busy(pending_busy_.empty() ? cpu_us_ : std::min(cpu_us_, pending_since_cpu_us_));
  if (record_timeline_) {
    result_.timeline.push_back(
        {std::string(name), stream_id, start_us, duration_us, category, key});
  }
}

void RankSimulator::apply_host_sync(const SimOp& op) {
  switch (op.host_sync) {
    case HostSync::kNone:
      return;
    case HostSync::kStream:
      cpu_us_ = std::max(cpu_us_, stream_state(compute_stream_).clock_us);
      return;
    case HostSync::kDevice:
      for (const auto& [id, state] : streams_)
        cpu_us_ = std::max(cpu_us_, state.clock_us);
      return;
  }
}

void RankSimulator::wait_for_launch_slot() {
  while (!queued_ends_.empty() && queued_ends_.top() <= cpu_us_)
    queued_ends_.pop();
  const int depth = overheads_.launch.launch_queue_depth;
  while (depth > 0 && queued_ends_.size() >= static_cast<std::size_t>(depth)) {
    cpu_us_ = std::max(cpu_us_, queued_ends_.top());
    queued_ends_.pop();
  }
}

void RankSimulator::run_op(const SimOp& op) {
  if (op.queued_before_trace) {
    for (const SimKernel& kernel : op.kernels) {
      StreamState& stream = stream_state(kernel.stream);
      const TimestampUs start = stream.clock_us;
      stream.clock_us = start + kernel.duration_us;
      queued_ends_.push(stream.clock_us);  // they fill the launch queue the trace begins with
      add_kernel_busy(kernel, start);
      ++result_.kernels;
    }
    return;
  }
  if (op.recorded_host) {
    run_recorded_op(op);
    return;
  }
  const TimestampUs cpu_start = cpu_us_;
  // A continued op's parts share one T1/T2 before the first launch and one T3 after the last;
  // between parts the host spends what it spends between any two launches (T5).
  cpu_us_ += op.continues_previous ? overheads_.t5_us(op.name) : overheads_.t1_us(op.name);
  if (op.kernels.empty()) {
    if (!op.continued_by_next) {
      apply_host_sync(op);
      cpu_us_ += overheads_.t5_us(op.name);
    }
  } else {
    if (!op.continues_previous)
      cpu_us_ += overheads_.t2_us(op.name);
    for (std::size_t i = 0; i < op.kernels.size(); ++i) {
      const SimKernel& kernel = op.kernels[i];
      const DurationUs t4 = overheads_.t4_us(kernel.launch_api);
      launch_kernel(op, kernel, t4);
      if (i + 1 < op.kernels.size())
        cpu_us_ += overheads_.t5_us(op.name);
    }
    if (!op.continued_by_next) {
      apply_host_sync(op);
      cpu_us_ += overheads_.t3_us(op.name);
    }
  }
  if (!op.continues_previous)
    ++result_.ops;
  if (record_timeline_) {
    result_.timeline.push_back(
        {std::string(op.name), -1, cpu_start, cpu_us_ - cpu_start, KernelCategory::kOther, ""});
  }
}

void RankSimulator::launch_kernel(const SimOp& op, const SimKernel& kernel, DurationUs t4) {
  const LaunchParameters& launch = overheads_.launch;
  if (!kernel.is_collective) {
    const TimestampUs call_start = cpu_us_;
    wait_for_launch_slot();
    // A recorded launch time already holds the blocking the profiled run saw; the simulated
    // block replaces it: the call ends when the queue has room or as recorded, whichever is
    // later.
    if (kernel.recorded_launch_us)
      t4 = std::max<DurationUs>(0, t4 - (cpu_us_ - call_start));
  }
  const TimestampUs launch_ready = cpu_us_ + t4 * launch.launch_fraction_of_t4;
  StreamState& stream = stream_state(kernel.stream);
  if (kernel.is_collective) {
    const RankCollective rank_collective = program_.collective_of(op);
    const SimCollective& collective = rank_collective.shared;
    // The communication stream waits for the work queued before it on the compute stream
    // (seed 001 Algorithm 1: synchronize T_cm and T_cp at a communication op).
    const TimestampUs ready = std::max({stream.clock_us + launch.kernel_gap_us, launch_ready,
                                        stream_state(compute_stream_).clock_us});
    CollectivePost post;
    post.sim_rank = program_.sim_rank;
    post.group = rank_collective.group;
    post.index_in_group = rank_collective.index_in_group;
    post.members = rank_collective.members;
    post.ready_us = ready;
    post.duration_us = posted_duration_us(rank_collective, ready);
    post.combine = collective.combine;
    Posted posted;
    posted.handle = sync_.post(post);
    posted.op = &op;
    const std::size_t index = posted_.size();
    if (posted_.capacity() == 0)
      posted_.reserve(program_.coverage.collectives);  // each collective op posts once
    posted_.push_back(posted);
    stream_state(kernel.stream).pending = index;
    last_collective_ = index;
    if (collective.seq)
      posted_by_seq_[*collective.seq] = index;
    for (std::int64_t tensor : collective.produced_tensor_ids)
      tensor_producer_[tensor] = index;
    GroupTraffic& traffic = result_.groups[rank_collective.group];
    ++traffic.collectives;
    traffic.bytes += collective.comm.bytes_in;
    if (pending_busy_.empty())
      pending_since_cpu_us_ = cpu_us_;  // its start is at least its launch_ready
    pending_busy_.push_back({&kernel, 0, index});
    resolved(index);  // in-process groups may resolve at once
  } else {
    const TimestampUs start = std::max(stream.clock_us + launch.kernel_gap_us, launch_ready);
    stream.clock_us = start + kernel.duration_us;
    queued_ends_.push(stream.clock_us);
    add_kernel_busy(kernel, start);
    note_step_kernel(start, stream.clock_us);
    if (kernel.category != KernelCategory::kCommunication)
      compute_stream_ = kernel.stream;
  }
  ++result_.kernels;
  cpu_us_ += t4;
  if (kernel.host_waits)
    cpu_us_ = std::max(cpu_us_, stream_state(kernel.stream).clock_us);
}

// The op's recorded host time: the gap before it, each launch no earlier than its recorded
// offset from the op's start and as long as recorded, the op's end no earlier than recorded;
// a blocking call's waiting is simulated, the rest of the op after it replayed.
void RankSimulator::run_recorded_op(const SimOp& op) {
  const RecordedHostTiming& recorded = *op.recorded_host;
  if (!op.continues_previous) {
    TimestampUs start = recorded_previous_start_us_ + recorded.start_offset_us;
    auto thread_end = recorded_thread_end_us_.find(recorded.thread_id);
    start = std::max(start, (thread_end == recorded_thread_end_us_.end() ? program_.start_us
                                                                         : thread_end->second) +
                                recorded.thread_gap_us);
    cpu_us_ = start;
    recorded_op_start_us_ = start;
    recorded_previous_start_us_ = start;
  }
  const TimestampUs cpu_start = cpu_us_;
  for (const SimKernel& kernel : op.kernels) {
    if (kernel.recorded_launch_offset_us)
      cpu_us_ = std::max(cpu_us_, recorded_op_start_us_ + *kernel.recorded_launch_offset_us);
    const DurationUs t4 = kernel.recorded_launch_us ? *kernel.recorded_launch_us
                                                    : overheads_.t4_us(kernel.launch_api);
    launch_kernel(op, kernel, t4);
  }
  if (!op.continued_by_next) {
    if (recorded.block_offset_us && op.host_sync != HostSync::kNone) {
      cpu_us_ = std::max(cpu_us_, recorded_op_start_us_ + *recorded.block_offset_us);
      apply_host_sync(op);
      cpu_us_ += recorded.after_block_us;
    } else {
      cpu_us_ = std::max(cpu_us_, recorded_op_start_us_ + recorded.cpu_us);
    }
    recorded_thread_end_us_[recorded.thread_id] = cpu_us_;
    recorded_cpu_end_us_ = std::max(recorded_cpu_end_us_, cpu_us_);
  }
  if (!op.continues_previous)
    ++result_.ops;
  if (record_timeline_) {
    result_.timeline.push_back(
        {std::string(op.name), -1, cpu_start, cpu_us_ - cpu_start, KernelCategory::kOther, ""});
  }
}

RankSimulator::Progress RankSimulator::advance() {
  if (finished_)
    return Progress::kFinished;
  while (next_op_ < program_.ops.size()) {
    const SimOp& op = program_.ops[next_op_];
    std::vector<std::size_t> needed = requirements(op);
    for (std::size_t index : needed) {
      if (!resolved(index)) {
        blocked_posted_ = index;
        return Progress::kBlocked;
      }
    }
    // Intra-rank synchronization: the compute stream joins what this op waits for.
    if (std::optional<std::size_t> waited = waited_collective(op)) {
      wait_on_stream(compute_stream_, *waited);
      if (waited == last_collective_)
        last_collective_.reset();
    }
    for (std::int64_t tensor : op.consumed_tensor_ids) {
      auto producer = tensor_producer_.find(tensor);
      if (producer == tensor_producer_.end())
        continue;
      wait_on_stream(compute_stream_, producer->second);
      tensor_producer_.erase(producer);
    }
    run_op(op);
    ++next_op_;
  }
  for (std::size_t index = first_unresolved(); index < posted_.size(); ++index) {
    if (!resolved(index)) {
      blocked_posted_ = index;
      return Progress::kBlocked;
    }
  }
  blocked_posted_.reset();
  finished_ = true;

  cpu_us_ = std::max(cpu_us_, recorded_cpu_end_us_);  // threads may end out of order
  result_.cpu_us = cpu_us_;
  result_.iteration_us = cpu_us_;
  for (const auto& [id, stream] : streams_) {
    result_.iteration_us = std::max(result_.iteration_us, stream.clock_us);
    result_.streams.push_back({id, stream.busy_us, stream.by_category_us});
  }
  sweep_busy(std::numeric_limits<TimestampUs>::infinity());
  result_.gpu_busy_us = busy_swept_us_;
  result_.gpu_idle_us = result_.iteration_us - busy_swept_us_;
  release_traversal_state();
  return Progress::kFinished;
}

void RankSimulator::release_traversal_state() {
  // The result holds all that is read from here on; ranks that finish early give back their
  // posted records, streams and queues while the others still run.
  std::vector<Posted>().swap(posted_);
  std::vector<std::pair<TimestampUs, TimestampUs>>().swap(busy_intervals_);
  decltype(queued_ends_)().swap(queued_ends_);
  decltype(streams_)().swap(streams_);
  decltype(pending_busy_)().swap(pending_busy_);
  decltype(posted_by_seq_)().swap(posted_by_seq_);
  decltype(tensor_producer_)().swap(tensor_producer_);
  decltype(recorded_thread_end_us_)().swap(recorded_thread_end_us_);
  first_unresolved_ = 0;
  last_collective_.reset();
}

std::string RankSimulator::blocked_on() const {
  if (!blocked_posted_)
    return "";
  const Posted& posted = posted_[*blocked_posted_];
  const RankCollective collective = program_.collective_of(*posted.op);
  return "rank " + std::to_string(program_.sim_rank) + " waits for collective " +
         collective_key(collective.group, collective.index_in_group) + " (" +
         std::string(slot_of(posted).name) + ")";
}

RankResult RankSimulator::result() const {
  return result_;
}

}  // namespace perfsim::engine
