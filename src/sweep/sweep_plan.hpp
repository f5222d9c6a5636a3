#pragma once
// `perfsim sweep plan`: the numbered task table of a sweep, written to its directory.
#include "hdf5/column_table.hpp"
#include "sweep/sweep_spec.hpp"

namespace perfsim::sweep {

// One row per task: task, mpi_processes, simulated_ranks, one text column per varied key,
// and the task's simulate arguments as one shell-quoted string.
h5::ColumnTable task_table(const SweepSpec& spec);

// Creates the sweep directory and writes tasks.csv and sweep.json (a copy of the sweep file,
// which `sweep submit` hands to the jobs so that editing the original after a submission
// cannot renumber tasks in flight). Returns the copy's path.
std::filesystem::path write_plan(const SweepSpec& spec);

}  // namespace perfsim::sweep
