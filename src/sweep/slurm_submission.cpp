#include "sweep/slurm_submission.hpp"

#include <algorithm>
#include <fstream>
#include <map>

#include "io/atomic_file.hpp"
#include "perfsim/error.hpp"
#include "sweep/child_process.hpp"

namespace perfsim::sweep {
namespace {

namespace fs = std::filesystem;

std::string header(const SweepSpec& spec, const SubmitOptions& options, const std::string& job,
                   const std::string& output_pattern, const std::string& time, int ntasks) {
  const std::string partition =
      options.partition.empty() ? spec.slurm.partition : options.partition;
  std::string text = "#!/bin/bash\n";
  text += "# Written by `perfsim sweep submit` for sweep " + spec.name + ".\n";
  text += "#SBATCH --job-name=" + job + "\n";
  text += "#SBATCH --ntasks=" + std::to_string(ntasks) + "\n";
  text += "#SBATCH --time=" + time + "\n";
  text += "#SBATCH --chdir=" + options.working_directory.string() + "\n";
  text += "#SBATCH --output=" + (options.directory / "slurm" / output_pattern).string() + "\n";
  if (!partition.empty())
    text += "#SBATCH --partition=" + partition + "\n";
  for (const std::string& argument : spec.slurm.sbatch_args)
    text += "#SBATCH " + argument + "\n";
  return text;
}

}  // namespace

SubmissionScripts slurm_scripts(const SweepSpec& spec, const SubmitOptions& options) {
  if (options.task_indices.empty())
    throw InputError(spec.file.string(), "", "no task to submit");
  if (options.max_array_size == 0)
    throw InputError("--max-array-size", "", "must be positive");
  std::map<int, std::vector<int>> by_processes;
  for (int index : options.task_indices) {
    if (index < 0 || index >= static_cast<int>(spec.tasks.size()))
      throw InputError(spec.file.string(), "task " + std::to_string(index), "no such task");
    by_processes[spec.tasks[index].mpi_processes].push_back(index);
  }
  const std::string time = options.time.empty() ? spec.slurm.time : options.time;
  const fs::path slurm_directory = options.directory / "slurm";

  SubmissionScripts scripts;
  for (auto& [processes, tasks] : by_processes) {
    std::sort(tasks.begin(), tasks.end());
    for (std::size_t first = 0, chunk = 0; first < tasks.size();
         first += options.max_array_size, ++chunk) {
      ArrayScript array;
      array.mpi_processes = processes;
      const std::size_t last = std::min(tasks.size(), first + options.max_array_size);
      array.tasks.assign(tasks.begin() + static_cast<std::ptrdiff_t>(first),
                         tasks.begin() + static_cast<std::ptrdiff_t>(last));
      const std::string stem = "array-np" + std::to_string(processes) + "-" + std::to_string(chunk);
      array.path = slurm_directory / (stem + ".sbatch");
      std::string range = "0-" + std::to_string(array.tasks.size() - 1);
      if (options.max_parallel > 0)
        range += "%" + std::to_string(options.max_parallel);
      array.text =
          header(spec, options, "perfsim-" + spec.name, stem + "-%A_%a.out", time, processes);
      array.text += "#SBATCH --array=" + range + "\n\n";
      array.text += "# Array element i runs sweep task tasks[i] (tasks needing " +
                    std::to_string(processes) + " MPI processes).\n";
      array.text += "tasks=(";
      for (std::size_t i = 0; i < array.tasks.size(); ++i)
        array.text += (i ? " " : "") + std::to_string(array.tasks[i]);
      array.text += ")\n";
      array.text += "exec " +
                    shell_join({options.perfsim_binary.string(), "sweep", "run",
                                options.sweep_file.string(), "--dir", options.directory.string()}) +
                    " --task \"${tasks[$SLURM_ARRAY_TASK_ID]}\"\n";
      scripts.arrays.push_back(std::move(array));
    }
  }
  scripts.merge_path = slurm_directory / "merge.sbatch";
  scripts.merge_text =
      header(spec, options, "perfsim-" + spec.name + "-merge", "merge-%j.out", "00:30:00", 1);
  scripts.merge_text +=
      "\n# Runs after every array job ended (afterany): reports missing and "
      "failed tasks by index.\n";
  scripts.merge_text +=
      "exec " +
      shell_join({options.perfsim_binary.string(), "sweep", "merge", options.sweep_file.string(),
                  "--dir", options.directory.string()}) +
      "\n";
  return scripts;
}

void write_scripts(const SubmissionScripts& scripts) {
  auto write = [](const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    io::write_file_atomically(path, text);
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  };
  for (const ArrayScript& array : scripts.arrays)
    write(array.path, array.text);
  write(scripts.merge_path, scripts.merge_text);
}

std::string parse_job_id(const std::string& sbatch_output) {
  const std::size_t start = sbatch_output.find_first_of("0123456789");
  if (start == std::string::npos)
    throw RuntimeFailure("sbatch printed no job id: \"" + sbatch_output + "\"");
  const std::size_t end = sbatch_output.find_first_not_of("0123456789", start);
  return sbatch_output.substr(start, end - start);
}

}  // namespace perfsim::sweep
