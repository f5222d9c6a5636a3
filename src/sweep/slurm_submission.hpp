#pragma once
// `perfsim sweep submit`: sbatch job arrays for a sweep's tasks and a merge job that runs after
// them. Tasks are grouped by MPI process count (an array has one --ntasks), each group split
// into arrays of at most max_array_size; array element i runs the i-th task of its group:
//   perfsim sweep run SWEEP --dir DIR --task ${tasks[$SLURM_ARRAY_TASK_ID]}
// inside its allocation (where `sweep run` launches with srun).
#include <filesystem>
#include <string>
#include <vector>

#include "sweep/sweep_spec.hpp"

namespace perfsim::sweep {

struct SubmitOptions {
  std::vector<int> task_indices;      // which tasks to submit
  int max_parallel = 0;               // array throttle (%K); 0: none
  std::string time;                   // empty: the sweep file's slurm.time
  std::string partition;              // empty: the sweep file's slurm.partition
  std::size_t max_array_size = 1000;  // Slurm's default MaxArraySize is 1001
  // Absolute paths baked into the scripts.
  std::filesystem::path perfsim_binary;
  std::filesystem::path sweep_file;
  std::filesystem::path directory;
  std::filesystem::path working_directory;
};

struct ArrayScript {
  std::filesystem::path path;
  int mpi_processes = 1;
  std::vector<int> tasks;  // array element i runs tasks[i]
  std::string text;
};

struct SubmissionScripts {
  std::vector<ArrayScript> arrays;
  std::filesystem::path merge_path;
  std::string merge_text;  // submitted with --dependency=afterany:<every array job>
};

SubmissionScripts slurm_scripts(const SweepSpec& spec, const SubmitOptions& options);
// Writes every script (mode 0755) under <directory>/slurm.
void write_scripts(const SubmissionScripts& scripts);

// The job id from `sbatch --parsable` output ("1234" or "1234;cluster").
std::string parse_job_id(const std::string& sbatch_output);

}  // namespace perfsim::sweep
