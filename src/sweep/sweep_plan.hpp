#pragma once
// `perfsim sweep plan`: the numbered task table of a sweep, written to its directory.
#include "hdf5/column_table.hpp"
#include "sweep/sweep_spec.hpp"

namespace perfsim::sweep {

// One row per task: task, mpi_processes, simulated_ranks, one text column per varied key,
// and the task's simulate arguments as one shell-quoted string.
h5::ColumnTable task_table(const SweepSpec& spec);

// Ties the sweep directory to this sweep file: writes tasks.csv and sweep.json (a copy of the
// file, which `sweep submit` hands to the jobs so that editing the original after a submission
// cannot renumber tasks in flight) unless the copy there already has the same text. Throws
// InputError when the directory holds results of a different text (their task numbers would
// no longer match). Every sweep command calls it first. Returns the copy's path.
std::filesystem::path write_plan(const SweepSpec& spec);

}  // namespace perfsim::sweep
