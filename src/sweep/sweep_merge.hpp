#pragma once
// `perfsim sweep merge`: one row per task (its state, parameters and predicted figures) in one
// HDF5 table plus CSV, and which tasks are missing or failed.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "hdf5/column_table.hpp"
#include "sweep/sweep_spec.hpp"
#include "sweep/task_files.hpp"

namespace perfsim::sweep {

inline constexpr const char* kMergedGroup = "/sweep/tasks";

struct MergedSweep {
  // Columns: task, state, mpi_processes, simulated_ranks, one per varied key (float64 when
  // every value is a number, else string), the figures of task_figures.hpp (NaN where a task
  // has none), exit_status and error (failed tasks).
  h5::ColumnTable table;
  std::vector<int> missing_indices;  // never finished: pending or running
  std::vector<int> failed_indices;   // failed, or lost (died without a record)
  std::map<int, TaskFailure> failures;
};

MergedSweep merge_sweep(const SweepSpec& spec);

// Writes <directory>/merged.h5 (group /sweep/tasks) and <directory>/merged.csv.
void write_merged(const SweepSpec& spec, const MergedSweep& merged);

}  // namespace perfsim::sweep
