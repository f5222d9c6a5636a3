#pragma once
// `perfsim simulate --timeline PATH [--timeline-format chrome|kineto] [--timeline-ranks LIST]`:
// the chosen ranks' timelines written while they arrive, one rank at a time, so no process
// ever holds every rank's slices (a 1,024-rank timeline costs one rank's memory).
//   chrome: one Trace Event Format JSON file at PATH, every rank a process (Perfetto).
//   kineto: a directory PATH with one PyTorch-profiler trace per rank, rank-N.json (HTA).
#include <functional>
#include <string>
#include <vector>

#include "perfsim/rank_result.hpp"

namespace perfsim::results {

struct TimelineRequest {
  std::string path;
  std::string format = "chrome";  // chrome or kineto
  std::vector<int> ranks;         // ascending: the ranks to write
  bool wants(int rank) const;
};

using RankSink = std::function<void(const RankResult&)>;

// Before a long run: the file (chrome) or the directory, created if missing (kineto), must
// accept output. Throws RuntimeFailure.
void check_timeline_writable(const TimelineRequest& request);

// Calls `produce` with a sink to hand over ranks (any order, each at most once; unwanted ones
// are ignored) and writes them as they come. Throws RuntimeFailure when a wanted rank never
// came, so a partial timeline is never mistaken for a whole one.
void write_timeline(const TimelineRequest& request, int world_size,
                    const std::function<void(const RankSink&)>& produce);

}  // namespace perfsim::results
