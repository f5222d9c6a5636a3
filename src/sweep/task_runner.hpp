#pragma once
// Runs sweep tasks: each one `perfsim simulate` under mpirun (or srun inside a Slurm
// allocation) with its own MPI process count, results to the task's file (task_files.hpp).
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "sweep/sweep_spec.hpp"

namespace perfsim::sweep {

enum class Launcher { kMpirun, kSrun };

// srun when inside a Slurm allocation (SLURM_JOB_ID set), mpirun otherwise.
Launcher default_launcher(const std::vector<std::string>& environment);

struct RunSettings {
  Launcher launcher = Launcher::kMpirun;
  std::filesystem::path perfsim_binary;
  std::vector<std::string> environment;  // for the launcher (see launcher_environment)
};

// The full command of one task: launcher, process count, perfsim simulate, its settings,
// --results <partial file> --run-name task.
std::vector<std::string> task_command(const SweepSpec& spec, const SweepTask& task,
                                      const RunSettings& settings);

struct TaskOutcome {
  int index = 0;
  bool succeeded = false;
  int exit_status = 0;
  double wall_s = 0;
};

// Runs the tasks with these indices, at most `jobs` at a time, each one after the other in
// index order as slots free up. Before a task starts its old files are removed and a running
// marker written; after it ends, either its results file is in place or its failure record
// is. `on_finish` is called as each task ends (in completion order). SIGTERM, SIGINT or SIGHUP
// (a Slurm time limit, scancel, Ctrl-C) stops the run: the running tasks get the signal and are
// recorded as failed with exit status 128 + signal, then RuntimeFailure is thrown.
std::vector<TaskOutcome> run_tasks(const SweepSpec& spec, const std::vector<int>& indices, int jobs,
                                   const RunSettings& settings,
                                   const std::function<void(const TaskOutcome&)>& on_finish);

}  // namespace perfsim::sweep
