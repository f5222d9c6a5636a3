#pragma once
// Moves the recorded timelines to process 0 one rank at a time, in rank order, so process 0
// can write each while the next is on its way: its memory holds one remote rank's slices,
// never all ranks' (the result gather after this carries no timelines).
#include <mpi.h>

#include <functional>
#include <span>
#include <vector>

#include "perfsim/rank_result.hpp"

namespace perfsim::mpi {

// Collective over `world`. `wanted(rank)` must answer alike on every process; process 0's
// `sink_on_root` receives every wanted rank (the other processes' sinks are never called).
// Afterwards every local result's timeline is empty.
void stream_timelines_to_root(MPI_Comm world, std::vector<RankResult>& local_results,
                              std::span<const int> process_of_rank,
                              const std::function<bool(int)>& wanted,
                              const std::function<void(const RankResult&)>& sink_on_root);

}  // namespace perfsim::mpi
