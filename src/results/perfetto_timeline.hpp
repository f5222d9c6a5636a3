#pragma once
// A Chrome/Perfetto trace (JSON "traceEvents") of the simulated iteration: one process per
// rank, one thread for the CPU and one per stream, every op and kernel a slice, and each
// collective linked across its member ranks by a flow arrow. Open in ui.perfetto.dev or
// chrome://tracing.
#include <span>
#include <string>

#include "perfsim/rank_result.hpp"

namespace perfsim::results {

void write_perfetto_timeline(const std::string& file_path, std::span<const RankResult> results);

}  // namespace perfsim::results
