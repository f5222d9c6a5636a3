#include "overheads/overhead_extractor.hpp"

#include <cmath>

#include "overheads/overhead_samples.hpp"
#include "perfsim/error.hpp"

namespace perfsim::overheads {
namespace {

bool same_parameters(const LaunchParameters& a, const LaunchParameters& b) {
  return a.kernel_gap_us == b.kernel_gap_us && a.launch_fraction_of_t4 == b.launch_fraction_of_t4 &&
         a.profiler_cpu_overhead_us == b.profiler_cpu_overhead_us &&
         a.profiler_gpu_overhead_us == b.profiler_gpu_overhead_us &&
         a.remove_iqr_outliers == b.remove_iqr_outliers;
}

void pool_into(OpOverheads& into, const OpOverheads& from) {
  into.t1 = pool_stats(into.t1, from.t1);
  into.t2 = pool_stats(into.t2, from.t2);
  into.t3 = pool_stats(into.t3, from.t3);
  into.t5 = pool_stats(into.t5, from.t5);
}

}  // namespace

HostOverheads extract_host_overheads(const Trace& trace, const LaunchParameters& launch) {
  return summarize_overheads(collect_overhead_samples(trace, launch), launch);
}

OverheadStats pool_stats(const OverheadStats& a, const OverheadStats& b) {
  if (a.count == 0)
    return b;
  if (b.count == 0)
    return a;
  const auto na = static_cast<double>(a.count);
  const auto nb = static_cast<double>(b.count);
  const double n = na + nb;
  OverheadStats pooled;
  pooled.count = a.count + b.count;
  pooled.mean_us = (na * a.mean_us + nb * b.mean_us) / n;
  // Sum of squared deviations of the union (Chan et al.'s pairwise update).
  const double delta = b.mean_us - a.mean_us;
  const double squares =
      na * a.stddev_us * a.stddev_us + nb * b.stddev_us * b.stddev_us + delta * delta * na * nb / n;
  pooled.stddev_us = std::sqrt(squares / n);
  return pooled;
}

HostOverheads merge_host_overheads(std::span<const HostOverheads> sets) {
  HostOverheads merged;
  if (sets.empty())
    return merged;
  merged.launch = sets.front().launch;
  for (const HostOverheads& set : sets) {
    if (!same_parameters(set.launch, merged.launch)) {
      throw RuntimeFailure(
          "merge_host_overheads: overhead sets were extracted with different launch parameters");
    }
    for (const auto& [name, stats] : set.per_op)
      pool_into(merged.per_op[name], stats);
    for (const auto& [api, stats] : set.t4_per_runtime)
      merged.t4_per_runtime[api] = pool_stats(merged.t4_per_runtime[api], stats);
    pool_into(merged.all_ops, set.all_ops);
    merged.t4_all = pool_stats(merged.t4_all, set.t4_all);
    merged.source_traces += set.source_traces;
  }
  return merged;
}

}  // namespace perfsim::overheads
