#pragma once
// Host overheads T1..T5 from Kineto-loaded traces (seed 000 Sec. 4.3.3 and 4.4.2): extraction
// from one trace, and the shared set of several traces.
#include <span>

#include "perfsim/host_overheads.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::overheads {

// Samples as defined in overhead_samples.hpp, 1.5 IQR outliers removed per (op, type) and per
// runtime API, pooled fallbacks over every op. The trace must carry measured times (Kineto).
HostOverheads extract_host_overheads(const Trace& trace, const LaunchParameters& launch = {});

// The shared overhead set of seed 000 Sec. 4.4.3 ("shared_E2E": samples averaged across
// workloads): outliers are removed per workload at extraction, then each (op, type) pools the
// kept samples of every set (pooled mean and population variance, exact for the union of the
// kept samples). Throws RuntimeFailure when the sets were extracted with different
// LaunchParameters. An empty span gives an empty set.
HostOverheads merge_host_overheads(std::span<const HostOverheads> sets);

// Pooled statistics of two sample sets given by their statistics.
OverheadStats pool_stats(const OverheadStats& a, const OverheadStats& b);

}  // namespace perfsim::overheads
