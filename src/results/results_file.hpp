#pragma once
// The results HDF5 file: one group per run under /runs/<run name>, holding three tables
// (src/hdf5/column_table.hpp layout, readable with h5py/pandas):
//   ranks   — one row per simulated rank: iteration, CPU, kernel time, GPU busy/idle and the
//             seed 001 Fig. 2 breakdown, in us
//   streams — one row per (rank, stream): busy time and breakdown
//   groups  — one row per (rank, process group): collectives, bytes, time, exposed time and
//             the part of it before the collective started (waiting for its peers)
// Run attributes (inputs and their hashes, duration sources, perfsim version) sit on the
// ranks table.
#include <map>
#include <span>
#include <string>

#include "perfsim/rank_result.hpp"

namespace perfsim::results {

void write_run_results(const std::string& file_path, const std::string& run_name,
                       std::span<const RankResult> results,
                       const std::map<std::string, std::string>& run_attributes);

}  // namespace perfsim::results
