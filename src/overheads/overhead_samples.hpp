#pragma once
// Raw host-overhead samples T1..T5 (seed 000 Sec. 4.3.3, Fig. 4.6) measured on a Kineto-loaded
// trace, and the statistics made from them.
//
// Definitions, for every top-level op (Trace::top_level_positions) inside the ProfilerStep
// window (the whole trace when there is none):
// - T1: start of the op minus end of the previous top-level op on the same CPU thread (both
//   in the window). Attributed to the op that follows the gap, as Algorithm 3 adds T1 before
//   each op.
// - A launch is a runtime call of the op's subtree that issued GPU work (a Kernel carries its
//   correlation id). Calls that launch nothing (cudaStreamWaitEvent, cudaEventQuery, ...) are
//   CPU time inside T2/T3/T5, as they are for the engine.
// - T2: first launch start minus op start. T3: op end minus last launch end.
// - T5: next launch start minus previous launch end, one sample per pair. An op that launches
//   nothing gets one T5 sample: its whole CPU duration (Algorithm 3 line 19 adds T5 for it).
// - T4: duration of each launch, per runtime API. Non-launching calls have no T4: their
//   duration is waiting or bookkeeping, not launch cost.
// Profiler overhead (seed 000 Sec. 4.3.3: every recorded CPU event costs about 2 us,
// LaunchParameters::profiler_cpu_overhead_us) is subtracted once per recorded CPU event (op,
// annotation, runtime call) that lies inside the interval, as the original implementation
// does (T2: events before the first launch; T3: events after the last; T5: events between two
// launches, or every event under an op that launches nothing). T1 is charged once more (the
// recording of the two ops around the gap) and T4 once (the runtime call's own recording).
// Samples are clamped at 0.
#include <map>
#include <span>
#include <string>
#include <vector>

#include "perfsim/host_overheads.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::overheads {

struct OpSamples {
  std::vector<double> t1_us, t2_us, t3_us, t5_us;
};

struct OverheadSamples {
  std::map<std::string, OpSamples> per_op;                       // by op name
  std::map<std::string, std::vector<double>> t4_per_runtime_us;  // by runtime API
};

OverheadSamples collect_overhead_samples(const Trace& trace, const LaunchParameters& launch);

// Keeps the samples inside the whiskers [Q1 - 1.5 IQR, Q3 + 1.5 IQR] (seed 000 Sec. 4.4.2).
// Quartiles interpolate linearly between order statistics (position q * (n - 1)), as numpy's
// default percentile does. Order of the kept samples is preserved.
std::vector<double> remove_outliers_iqr(std::span<const double> samples);

// Mean, population standard deviation and count.
OverheadStats stats_of(std::span<const double> samples);

// Per (op, type) and per runtime API: outliers removed, then statistics. The pooled fallbacks
// (all_ops, t4_all) remove outliers from the union of that type's samples over every op.
HostOverheads summarize_overheads(const OverheadSamples& samples, const LaunchParameters& launch);

}  // namespace perfsim::overheads
