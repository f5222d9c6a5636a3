#include "overheads/overhead_samples.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace perfsim::overheads {
namespace {

// A recorded host event inside a top-level op: a descendant op (start, duration) or a runtime
// call, in execution order.
struct HostEvent {
  TimestampUs start_us = 0;
  DurationUs duration_us = 0;
  bool is_launch = false;
  const RuntimeCall* call = nullptr;
  // The host waits for the device during this call (a synchronize, or the launch of a copy
  // into pageable memory): the engine models that wait itself, so it is not overhead.
  bool blocking = false;
};

class SubtreeWalker {
 public:
  explicit SubtreeWalker(const Trace& trace) : trace_(trace) {}

  // Every event below `op` (the op itself excluded), in the loader's execution order: by
  // start, longer first, ops before runtime calls.
  std::vector<HostEvent> events_under(const Op& op) const {
    std::vector<HostEvent> events;
    append_children(op, events);
    return events;
  }

 private:
  struct Item {
    TimestampUs start_us;
    DurationUs duration_us;
    const Op* op;
    const RuntimeCall* call;
  };

  void append_children(const Op& op, std::vector<HostEvent>& events) const {
    std::unordered_set<std::int64_t> launched;
    std::unordered_set<std::int64_t> blocking_launches;
    for (const Kernel& kernel : op.kernels) {
      launched.insert(kernel.correlation_id);
      if (kernel.blocks_host())
        blocking_launches.insert(kernel.correlation_id);
    }
    std::vector<Item> items;
    for (std::int64_t child_id : op.child_ids) {
      const Op* child = trace_.find(child_id);
      if (child != nullptr && child->measured_start_us && child->measured_duration_us)
        items.push_back({*child->measured_start_us, *child->measured_duration_us, child, nullptr});
    }
    for (const RuntimeCall& call : op.runtime_calls)
      items.push_back({call.start_us, call.duration_us, nullptr, &call});
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      if (a.start_us != b.start_us)
        return a.start_us < b.start_us;
      if (a.duration_us != b.duration_us)
        return a.duration_us > b.duration_us;
      return a.op != nullptr && b.op == nullptr;
    });
    for (const Item& item : items) {
      if (item.call != nullptr) {
        const bool blocking = is_blocking_runtime_call(item.call->name) ||
                              blocking_launches.count(item.call->correlation_id) > 0;
        events.push_back({item.start_us, item.duration_us,
                          launched.count(item.call->correlation_id) > 0, item.call, blocking});
      } else {
        events.push_back({item.start_us, item.duration_us, false, nullptr, false});
        append_children(*item.op, events);
      }
    }
  }

  const Trace& trace_;
};

// Start times of every recorded host event per thread, sorted, to count events inside gaps.
std::unordered_map<std::int64_t, std::vector<TimestampUs>> event_starts_by_thread(
    const Trace& trace) {
  std::unordered_map<std::int64_t, std::vector<TimestampUs>> starts;
  for (const Op& op : trace.ops) {
    if (!op.measured_start_us)
      continue;
    std::vector<TimestampUs>& thread = starts[op.thread_id];
    thread.push_back(*op.measured_start_us);
    for (const RuntimeCall& call : op.runtime_calls)
      thread.push_back(call.start_us);
  }
  for (auto& [thread, list] : starts)
    std::sort(list.begin(), list.end());
  return starts;
}

std::size_t count_strictly_inside(const std::vector<TimestampUs>& sorted, TimestampUs from,
                                  TimestampUs to) {
  if (to <= from)
    return 0;
  auto first = std::upper_bound(sorted.begin(), sorted.end(), from);
  auto last = std::lower_bound(sorted.begin(), sorted.end(), to);
  return last > first ? static_cast<std::size_t>(last - first) : 0;
}

// `events_charged` recorded events each cost the profiler overhead inside the interval.
double corrected(double interval_us, std::size_t events_charged, const LaunchParameters& launch) {
  double charge = launch.profiler_cpu_overhead_us * static_cast<double>(events_charged);
  return std::max(0.0, interval_us - charge);
}

double quantile_sorted(const std::vector<double>& sorted, double q) {
  double position = q * static_cast<double>(sorted.size() - 1);
  auto below = static_cast<std::size_t>(std::floor(position));
  std::size_t above = std::min(below + 1, sorted.size() - 1);
  double fraction = position - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

OverheadStats filtered_stats(std::span<const double> samples, const LaunchParameters& launch) {
  if (!launch.remove_iqr_outliers)
    return stats_of(samples);
  std::vector<double> kept = remove_outliers_iqr(samples);
  return stats_of(kept);
}

void append(std::vector<double>& to, const std::vector<double>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

OverheadSamples collect_overhead_samples(const Trace& trace, const LaunchParameters& launch) {
  OverheadSamples samples;
  TimestampUs window_start = -std::numeric_limits<double>::infinity();
  TimestampUs window_end = std::numeric_limits<double>::infinity();
  if (trace.measured_step) {
    window_start = trace.measured_step->start_us;
    window_end = trace.measured_step->start_us + trace.measured_step->duration_us;
  }
  auto starts = event_starts_by_thread(trace);
  std::vector<TimestampUs> all_starts;
  for (const auto& [thread, list] : starts)
    all_starts.insert(all_starts.end(), list.begin(), list.end());
  std::sort(all_starts.begin(), all_starts.end());
  SubtreeWalker walker(trace);
  // T1 is the gap the engine's single CPU clock sees: from the end of everything before (on
  // any thread: the autograd thread runs while the main thread waits in backward()) to this
  // op's start; overlapping ops give no gap.
  std::optional<TimestampUs> busy_until;

  for (std::size_t position : trace.top_level_positions()) {
    const Op& op = trace.ops[position];
    if (!op.measured_start_us || !op.measured_duration_us)
      continue;
    TimestampUs start = *op.measured_start_us;
    TimestampUs end = start + *op.measured_duration_us;
    if (start < window_start || end > window_end)
      continue;
    OpSamples& own = samples.per_op[op.name];

    if (busy_until) {
      const TimestampUs gap_from = std::min(*busy_until, start);
      std::size_t inside = count_strictly_inside(all_starts, gap_from, start);
      own.t1_us.push_back(corrected(start - gap_from, inside + 1, launch));
    }
    busy_until = std::max(busy_until.value_or(end), end);

    std::vector<HostEvent> events = walker.events_under(op);
    // Time the host spent blocked in events strictly between positions `from` and `to`.
    auto blocked_between = [&events](std::ptrdiff_t from, std::ptrdiff_t to) {
      DurationUs blocked = 0;
      for (std::ptrdiff_t i = from + 1; i < to; ++i) {
        if (events[static_cast<std::size_t>(i)].blocking) {
          blocked += events[static_cast<std::size_t>(i)].duration_us;
        }
      }
      return blocked;
    };
    const auto event_count = static_cast<std::ptrdiff_t>(events.size());
    std::vector<std::size_t> launches;
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (events[i].is_launch)
        launches.push_back(i);
    }
    if (launches.empty()) {
      own.t5_us.push_back(corrected(*op.measured_duration_us - blocked_between(-1, event_count),
                                    events.size(), launch));
      continue;
    }
    const HostEvent& first = events[launches.front()];
    const HostEvent& last = events[launches.back()];
    const auto first_index = static_cast<std::ptrdiff_t>(launches.front());
    const auto last_index = static_cast<std::ptrdiff_t>(launches.back());
    own.t2_us.push_back(corrected(first.start_us - start - blocked_between(-1, first_index),
                                  launches.front(), launch));
    own.t3_us.push_back(corrected(
        end - (last.start_us + last.duration_us) - blocked_between(last_index, event_count),
        events.size() - 1 - launches.back(), launch));
    for (std::size_t k = 1; k < launches.size(); ++k) {
      const HostEvent& previous = events[launches[k - 1]];
      const HostEvent& next = events[launches[k]];
      const DurationUs blocked = blocked_between(static_cast<std::ptrdiff_t>(launches[k - 1]),
                                                 static_cast<std::ptrdiff_t>(launches[k]));
      own.t5_us.push_back(
          corrected(next.start_us - (previous.start_us + previous.duration_us) - blocked,
                    launches[k] - launches[k - 1] - 1, launch));
    }
    for (std::size_t index : launches) {
      const HostEvent& call = events[index];
      if (call.blocking)
        continue;  // the engine waits for the copy itself
      samples.t4_per_runtime_us[call.call->name].push_back(corrected(call.duration_us, 1, launch));
    }
  }
  return samples;
}

std::vector<double> remove_outliers_iqr(std::span<const double> samples) {
  if (samples.empty())
    return {};
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  double q1 = quantile_sorted(sorted, 0.25);
  double q3 = quantile_sorted(sorted, 0.75);
  double whisker = 1.5 * (q3 - q1);
  std::vector<double> kept;
  kept.reserve(samples.size());
  for (double sample : samples) {
    if (sample >= q1 - whisker && sample <= q3 + whisker)
      kept.push_back(sample);
  }
  return kept;
}

OverheadStats stats_of(std::span<const double> samples) {
  OverheadStats stats;
  stats.count = static_cast<std::int64_t>(samples.size());
  if (samples.empty())
    return stats;
  double sum = 0;
  for (double sample : samples)
    sum += sample;
  stats.mean_us = sum / static_cast<double>(samples.size());
  double squares = 0;
  for (double sample : samples)
    squares += (sample - stats.mean_us) * (sample - stats.mean_us);
  stats.stddev_us = std::sqrt(squares / static_cast<double>(samples.size()));
  return stats;
}

HostOverheads summarize_overheads(const OverheadSamples& samples, const LaunchParameters& launch) {
  HostOverheads result;
  result.launch = launch;
  result.source_traces = 1;
  OpSamples pooled;
  for (const auto& [name, op] : samples.per_op) {
    OpOverheads& stats = result.per_op[name];
    stats.t1 = filtered_stats(op.t1_us, launch);
    stats.t2 = filtered_stats(op.t2_us, launch);
    stats.t3 = filtered_stats(op.t3_us, launch);
    stats.t5 = filtered_stats(op.t5_us, launch);
    append(pooled.t1_us, op.t1_us);
    append(pooled.t2_us, op.t2_us);
    append(pooled.t3_us, op.t3_us);
    append(pooled.t5_us, op.t5_us);
  }
  result.all_ops.t1 = filtered_stats(pooled.t1_us, launch);
  result.all_ops.t2 = filtered_stats(pooled.t2_us, launch);
  result.all_ops.t3 = filtered_stats(pooled.t3_us, launch);
  result.all_ops.t5 = filtered_stats(pooled.t5_us, launch);

  std::vector<double> pooled_t4;
  for (const auto& [api, durations] : samples.t4_per_runtime_us) {
    result.t4_per_runtime[api] = filtered_stats(durations, launch);
    append(pooled_t4, durations);
  }
  result.t4_all = filtered_stats(pooled_t4, launch);
  return result;
}

}  // namespace perfsim::overheads
