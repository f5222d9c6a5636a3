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
  result_.steps.reserve(program.steps.size());
  for (const ProgramStep& step : program.steps)
    result_.steps.push_back(step.label);
  bool replays_host = false;
  std::size_t kernels = 0;
  // Every stream the program can use (the compute stream starts as the default one).
  std::vector<StreamId> streams{kDefaultComputeStream};
  bool durations_non_negative = true;
  // Each distinct op once (with how many ops use it): an unfolded LLM rank's ~50 k ops are a
  // few thousand distinct ones, and each rank of a stage builds this from the same list.
  std::vector<std::size_t> uses(program.ops.distinct_ops(), 0);
  for (std::size_t i = 0; i < program.ops.size(); ++i)
    ++uses[program.ops.body_index(i)];
  for (std::uint32_t body = 0; body < uses.size(); ++body) {
    if (uses[body] == 0)
      continue;
    const SimOp& op = program.ops.body(body);
    replays_host = replays_host || op.recorded_host != nullptr;
    kernels += uses[body] * op.kernels.size();
    for (const SimKernel& kernel : op.kernels) {
      if (std::find(streams.begin(), streams.end(), kernel.stream) == streams.end())
        streams.push_back(kernel.stream);
      durations_non_negative = durations_non_negative && kernel.duration_us >= 0;
    }
  }
  program_streams_ = streams.size();
  streams_bound_starts_ = durations_non_negative;
  if (replays_host) {
    recorded_ = std::make_unique<RecordedReplay>();
    recorded_->previous_start_us = program.start_us;
  }
  // The launch queue blocks a launch only when `depth` launched kernels are still queued: a
  // program with no more kernels than that never fills it, and keeps no end times.
  const int depth = overheads.launch.launch_queue_depth;
  track_launch_queue_ = depth > 0 && kernels > static_cast<std::size_t>(depth);
  sweep_early_ = cpu_clock_monotonic(overheads) && !replays_host;
  share_links_ = program.link_sharing != nullptr;
  if (share_links_)
    link_occupancy_ = std::make_unique<LinkOccupancy>();
  // Every kernel adds a busy interval and a sweep usually leaves few: sized once for a sweep
  // rather than doubled past what a short program (40 synthetic ops) ever holds.
  if (sweep_early_)
    busy_intervals_.reserve(std::min(program.coverage.kernels, kMinSweep));
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
  const TimestampUs compute_clock_us = stream_state(compute_stream_).clock_us;
  const TimestampUs horizon_us = std::min(ready_us, std::max(cpu_us_, compute_clock_us));
  return latency_us +
         link_occupancy_->share(demand, ready_us, collective.duration_us - latency_us, horizon_us);
}

void RankSimulator::sweep_busy(TimestampUs bound) {
  // What the last sweep left is sorted and the intervals added since come mostly in order:
  // sorting only what follows the sorted run and merging gives the same order as sorting all.
  const auto sorted_end = std::is_sorted_until(busy_intervals_.begin(), busy_intervals_.end());
  std::sort(sorted_end, busy_intervals_.end());
  std::inplace_merge(busy_intervals_.begin(), sorted_end, busy_intervals_.end());
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

RankSimulator::StreamState& RankSimulator::other_stream_state(StreamId id) {
  // Two or three streams: searched in order (ascending by id).
  auto it = streams_.begin();
  while (it != streams_.end() && it->first < id)
    ++it;
  if (it == streams_.end() || it->first != id) {
    it = streams_.insert(it, {id, StreamState{}});
    it->second.clock_us = program_.start_us;
  }
  last_stream_ = static_cast<std::size_t>(it - streams_.begin());
  return it->second;
}

const RankSimulator::StreamState* RankSimulator::find_stream(StreamId id) const {
  for (const auto& [stream_id, stream] : streams_) {
    if (stream_id == id)
      return &stream;
  }
  return nullptr;
}

std::size_t RankSimulator::find_producer(std::int64_t tensor) const {
  const auto it = std::find_if(tensor_producer_.begin(), tensor_producer_.end(),
                               [tensor](const auto& entry) { return entry.first == tensor; });
  return static_cast<std::size_t>(it - tensor_producer_.begin());
}

const RankSimulator::Posted& RankSimulator::posted(std::size_t index) const {
  if (index >= posted_base_)
    return posted_[index - posted_base_];
  const auto kept = std::lower_bound(kept_posted_.begin(), kept_posted_.end(), index,
                                     [](const std::pair<std::size_t, Posted>& entry,
                                        std::size_t key) { return entry.first < key; });
  if (kept == kept_posted_.end() || kept->first != index)
    throw RuntimeFailure("rank simulator: posted collective " + std::to_string(index) +
                         " was dropped while still named");
  return kept->second;
}

RankSimulator::Posted& RankSimulator::posted(std::size_t index) {
  return const_cast<Posted&>(std::as_const(*this).posted(index));
}

bool RankSimulator::drop_resolved_posts() {
  // A wait may name any work handle of the run.
  if (posted_by_seq_ != nullptr && !posted_by_seq_->empty())
    return false;
  const std::size_t new_base = first_unresolved();
  if (2 * (new_base - posted_base_) < posted_.size() || new_base == posted_base_)
    return false;  // dropping less than half the window would make the moves quadratic
  // What may name a resolved collective: the last collective (for a wait op), a buffer's
  // producer and, in principle, the blocked wait. A stream's pending collective is unresolved
  // (reset when it resolves), and pending busy entries are flushed from the front as soon as it
  // resolves, so each names the first unresolved one or a later one: all at or after new_base,
  // which stays.
  std::vector<std::size_t> named;
  named.reserve(tensor_producer_.size() + 2);
  for (const auto& entry : tensor_producer_)
    named.push_back(entry.second);
  if (last_collective_)
    named.push_back(*last_collective_);
  if (blocked_posted_)
    named.push_back(*blocked_posted_);
  std::sort(named.begin(), named.end());
  auto is_named = [&named](std::size_t index) {
    return std::binary_search(named.begin(), named.end(), index);
  };
  std::erase_if(kept_posted_, [&](const auto& entry) { return !is_named(entry.first); });
  for (std::size_t index = posted_base_; index < new_base; ++index) {
    if (is_named(index))
      kept_posted_.emplace_back(index, posted_[index - posted_base_]);
  }
  posted_.erase(posted_.begin(),
                posted_.begin() + static_cast<std::ptrdiff_t>(new_base - posted_base_));
  posted_base_ = new_base;
  return true;
}

std::size_t RankSimulator::add_posted(const Posted& entry) {
  if (posted_.size() == posted_.capacity() && !drop_resolved_posts()) {
    // Doubled, but never past what the rest of the program can post (each collective op posts
    // once): a rank that needs every record ends no larger than an exact reservation.
    std::size_t capacity = std::max<std::size_t>(4, 2 * posted_.capacity());
    const std::size_t collectives = program_.coverage.collectives;
    if (collectives > posted_end())
      capacity = std::min(capacity, collectives - posted_base_);
    posted_.reserve(std::max(capacity, posted_.size() + 1));
  }
  posted_.push_back(entry);
  return posted_end() - 1;
}

const SimKernel& RankSimulator::slot_of(const Posted& posted) {
  for (const SimKernel& kernel : posted.op->kernels) {
    if (kernel.is_collective)
      return kernel;
  }
  throw RuntimeFailure("rank simulator: a posted collective's op has no collective slot");
}

bool RankSimulator::resolved(std::size_t posted_index) {
  Posted& entry = posted(posted_index);
  if (entry.has_timing())
    return true;
  const std::optional<CollectiveTiming> polled = sync_.poll(entry.handle);
  if (!polled)
    return false;
  entry.timing = *polled;
  ++resolved_count_;
  const CollectiveTiming timing = *polled;
  StreamState& stream = stream_state(slot_of(entry).stream);
  if (stream.pending == posted_index) {
    stream.clock_us = std::max(stream.clock_us, timing.end_us);
    stream.pending = kNotPosted;
  }
  flush_busy();
  return true;
}

void RankSimulator::add_kernel_busy(const SimKernel& kernel, TimestampUs start_us) {
  if (pending_busy_.empty()) {
    add_busy(kernel.stream, start_us, kernel.duration_us, kernel.category, kernel.name, "");
  } else {
    pending_busy_.push_back({&kernel, start_us, kNotPosted});
    pending_from_us_ = std::min(pending_from_us_, start_us);
  }
}

TimestampUs RankSimulator::later_launches_start_from() const {
  // A kernel starts no earlier than its launch call (the CPU clock, which never goes back under
  // sweep_early_) nor than its stream's clock plus the kernel gap; a collective no earlier than
  // its own ready time, which is as late. Stream clocks never go back while durations are not
  // negative; a stream not used yet starts at the program's start.
  TimestampUs bound = cpu_us_;
  if (!streams_bound_starts_)
    return bound;
  TimestampUs earliest_stream_us = streams_.size() < program_streams_
                                       ? program_.start_us
                                       : std::numeric_limits<TimestampUs>::infinity();
  for (const auto& [id, stream] : streams_)
    earliest_stream_us = std::min(earliest_stream_us, stream.clock_us);
  return std::max(bound, earliest_stream_us + std::min(0.0, overheads_.launch.kernel_gap_us));
}

void RankSimulator::flush_busy() {
  while (!pending_busy_.empty()) {
    const PendingBusy& front = pending_busy_.front();
    if (front.posted == kNotPosted) {
      const SimKernel& kernel = *front.kernel;
      add_busy(kernel.stream, front.start_us, kernel.duration_us, kernel.category, kernel.name, "");
    } else {
      const Posted& entry = posted(front.posted);
      if (!entry.has_timing())
        return;
      const CollectiveTiming timing = entry.timing;
      const RankCollective collective = program_.collective_of(*entry.op);
      const SimKernel& slot = slot_of(entry);
      add_busy(slot.stream, timing.start_us, timing.end_us - timing.start_us,
               KernelCategory::kCommunication, slot.name,
               record_timeline_ ? collective_key(collective.group, collective.index_in_group) : "");
      group_traffic(collective.group).time_us += timing.end_us - timing.start_us;
    }
    pending_busy_.pop_front();
  }
}

std::optional<std::size_t> RankSimulator::waited_collective(const SimOp& op) const {
  if (!op.waits_for_communication)
    return std::nullopt;
  if (op.waits_for_seq && posted_by_seq_ != nullptr) {
    if (auto it = posted_by_seq_->find(*op.waits_for_seq); it != posted_by_seq_->end())
      return it->second;
  }
  return last_collective_;
}

std::size_t RankSimulator::first_unresolved() const {
  while (first_unresolved_ < posted_end() && posted(first_unresolved_).has_timing())
    ++first_unresolved_;
  return first_unresolved_;
}

void RankSimulator::requirements(const SimOp& op, std::vector<std::size_t>& needed) const {
  needed.clear();
  if (std::optional<std::size_t> waited = waited_collective(op))
    needed.push_back(*waited);
  for (std::int64_t tensor : op.consumed_tensor_ids) {
    if (const std::size_t producer = find_producer(tensor); producer < tensor_producer_.size())
      needed.push_back(tensor_producer_[producer].second);
  }
  if (op.host_sync == HostSync::kDevice) {
    // The host waits for every stream, communication included.
    for (std::size_t index = first_unresolved(); index < posted_end(); ++index) {
      if (!posted(index).has_timing())
        needed.push_back(index);
    }
  }
  for (const SimKernel& kernel : op.kernels) {
    if (const StreamState* stream = find_stream(kernel.stream);
        stream != nullptr && stream->pending != kNotPosted) {
      needed.push_back(stream->pending);
    }
  }
}

GroupTraffic& RankSimulator::group_traffic(const std::string& group) {
  if (!traffic_slots_)
    traffic_slots_ = std::make_unique<TrafficSlots>();
  TrafficSlot& slot = (*traffic_slots_)[reinterpret_cast<std::uintptr_t>(&group) /
                                        sizeof(std::string) % kTrafficSlots];
  if (slot.name != &group)
    slot = {&group, &result_.groups[group]};
  return *slot.traffic;
}

void RankSimulator::wait_on_stream(StreamId stream_id, std::size_t posted_index) {
  const Posted& entry = posted(posted_index);
  StreamState& stream = stream_state(stream_id);
  const TimestampUs end = entry.timing.end_us;
  if (end > stream.clock_us) {
    GroupTraffic& traffic = group_traffic(program_.collective_of(*entry.op).group);
    traffic.exposed_us += end - stream.clock_us;
    traffic.exposed_before_start_us +=
        std::clamp(entry.timing.start_us - stream.clock_us, 0.0, end - stream.clock_us);
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
  if (sweep_early_ && busy_intervals_.size() >= next_sweep_size_) {
    const TimestampUs bound = later_launches_start_from();
    sweep_busy(pending_busy_.empty() ? bound : std::min(bound, pending_from_us_));
  }
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
      if (track_launch_queue_)
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
  const OpHostCosts& costs = host_costs_.op(op.name);
  // A continued op's parts share one T1/T2 before the first launch and one T3 after the last;
  // between parts the host spends what it spends between any two launches (T5).
  cpu_us_ += op.continues_previous ? costs.t5_us : host_costs_.t1_us(costs, op.phase);
  if (op.kernels.empty()) {
    if (!op.continued_by_next) {
      apply_host_sync(op);
      cpu_us_ += costs.t5_us;
    }
  } else {
    if (!op.continues_previous)
      cpu_us_ += costs.t2_us;
    for (std::size_t i = 0; i < op.kernels.size(); ++i) {
      const SimKernel& kernel = op.kernels[i];
      const DurationUs t4 = host_costs_.t4_us(kernel.launch_api);
      launch_kernel(op, kernel, t4);
      if (i + 1 < op.kernels.size())
        cpu_us_ += costs.t5_us;
    }
    if (!op.continued_by_next) {
      apply_host_sync(op);
      cpu_us_ += costs.t3_us;
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
  if (kernel.is_collective) {
    const RankCollective rank_collective = program_.collective_of(op);
    const SimCollective& collective = rank_collective.shared;
    // The communication stream waits for the work queued before it on the compute stream
    // (seed 001 Algorithm 1: synchronize T_cm and T_cp at a communication op). The compute
    // stream's state first: adding it may move the other's (stream_state).
    const TimestampUs compute_clock_us = stream_state(compute_stream_).clock_us;
    const TimestampUs ready = std::max({stream_state(kernel.stream).clock_us + launch.kernel_gap_us,
                                        launch_ready, compute_clock_us});
    CollectivePost post;
    post.sim_rank = program_.sim_rank;
    post.group = rank_collective.group;
    post.index_in_group = rank_collective.index_in_group;
    post.members = rank_collective.members;
    post.ready_us = ready;
    post.duration_us = posted_duration_us(rank_collective, ready);
    post.combine = collective.combine;
    Posted entry;
    entry.handle = sync_.post(post);
    entry.op = &op;
    const std::size_t index = add_posted(entry);
    stream_state(kernel.stream).pending = index;
    last_collective_ = index;
    if (collective.seq) {
      if (posted_by_seq_ == nullptr)
        posted_by_seq_ = std::make_unique<std::unordered_map<std::int64_t, std::size_t>>();
      (*posted_by_seq_)[*collective.seq] = index;
    }
    for (std::int64_t tensor : collective.produced_tensor_ids) {
      // A later production replaces one nobody consumed.
      if (const std::size_t producer = find_producer(tensor); producer < tensor_producer_.size())
        tensor_producer_[producer].second = index;
      else
        tensor_producer_.emplace_back(tensor, index);
    }
    GroupTraffic& traffic = group_traffic(rank_collective.group);
    ++traffic.collectives;
    traffic.bytes += collective.comm.bytes_in;
    // It starts when the last member is ready: no earlier than this rank's `ready`.
    pending_from_us_ = pending_busy_.empty() ? ready : std::min(pending_from_us_, ready);
    pending_busy_.push_back({&kernel, 0, index});
    resolved(index);  // in-process groups may resolve at once
  } else {
    StreamState& stream = stream_state(kernel.stream);
    const TimestampUs start = std::max(stream.clock_us + launch.kernel_gap_us, launch_ready);
    stream.clock_us = start + kernel.duration_us;
    if (track_launch_queue_)
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
  RecordedReplay& replay = *recorded_;  // allocated for every program with recorded ops
  if (!op.continues_previous) {
    TimestampUs start = replay.previous_start_us + recorded.start_offset_us;
    auto thread_end = replay.thread_end_us.find(recorded.thread_id);
    start = std::max(
        start, (thread_end == replay.thread_end_us.end() ? program_.start_us : thread_end->second) +
                   recorded.thread_gap_us);
    cpu_us_ = start;
    replay.op_start_us = start;
    replay.previous_start_us = start;
  }
  const TimestampUs cpu_start = cpu_us_;
  for (const SimKernel& kernel : op.kernels) {
    if (kernel.recorded_launch_offset_us)
      cpu_us_ = std::max(cpu_us_, replay.op_start_us + *kernel.recorded_launch_offset_us);
    const DurationUs t4 = kernel.recorded_launch_us ? *kernel.recorded_launch_us
                                                    : host_costs_.t4_us(kernel.launch_api);
    launch_kernel(op, kernel, t4);
  }
  if (!op.continued_by_next) {
    if (recorded.block_offset_us && op.host_sync != HostSync::kNone) {
      cpu_us_ = std::max(cpu_us_, replay.op_start_us + *recorded.block_offset_us);
      apply_host_sync(op);
      cpu_us_ += recorded.after_block_us;
    } else {
      cpu_us_ = std::max(cpu_us_, replay.op_start_us + recorded.cpu_us);
    }
    replay.thread_end_us[recorded.thread_id] = cpu_us_;
    replay.cpu_end_us = std::max(replay.cpu_end_us, cpu_us_);
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
  blocked_posted_.reset();  // names a collective only from kBlocked to the next advance
  while (next_op_ < program_.ops.size()) {
    const SimOp& op = program_.ops[next_op_];
    requirements(op, needed_);
    for (std::size_t index : needed_) {
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
      const std::size_t producer = find_producer(tensor);
      if (producer == tensor_producer_.size())
        continue;
      wait_on_stream(compute_stream_, tensor_producer_[producer].second);
      // The entries are unordered: the last takes its place.
      tensor_producer_[producer] = tensor_producer_.back();
      tensor_producer_.pop_back();
    }
    run_op(op);
    ++next_op_;
  }
  for (std::size_t index = first_unresolved(); index < posted_end(); ++index) {
    if (!resolved(index)) {
      blocked_posted_ = index;
      return Progress::kBlocked;
    }
  }
  blocked_posted_.reset();
  finished_ = true;

  // Threads may end out of order (0 without a replay, as before it had its own state).
  cpu_us_ = std::max(cpu_us_, recorded_ ? recorded_->cpu_end_us : TimestampUs{0});
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
  std::vector<std::size_t>().swap(needed_);
  decltype(kept_posted_)().swap(kept_posted_);
  posted_base_ = 0;
  std::vector<std::pair<TimestampUs, TimestampUs>>().swap(busy_intervals_);
  decltype(queued_ends_)().swap(queued_ends_);
  decltype(streams_)().swap(streams_);
  decltype(pending_busy_)().swap(pending_busy_);
  posted_by_seq_.reset();
  decltype(tensor_producer_)().swap(tensor_producer_);
  traffic_slots_.reset();
  recorded_.reset();
  first_unresolved_ = 0;
  last_collective_.reset();
}

std::string RankSimulator::blocked_on() const {
  if (!blocked_posted_)
    return "";
  const Posted& entry = posted(*blocked_posted_);
  const RankCollective collective = program_.collective_of(*entry.op);
  return "rank " + std::to_string(program_.sim_rank) + " waits for collective " +
         collective_key(collective.group, collective.index_in_group) + " (" +
         std::string(slot_of(entry).name) + ")";
}

RankResult RankSimulator::result() const {
  return result_;
}

}  // namespace perfsim::engine
