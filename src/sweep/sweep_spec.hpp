#pragma once
// A sweep file (JSON) expanded into numbered tasks, each one `perfsim simulate` run.
//
//   {
//     "name": "llm-layouts",                      // default: the file's stem
//     "directory": "sweep-llm-layouts",           // default: sweep-<name> (CLI --dir wins)
//     "base": {"model": "configs/models/llama3-8b.json", "global-batch": 16, ...},
//     "cases": [{"tp": 2, "pp": 1}, {"tp": 1, "pp": 2}],   // optional bundles of settings
//     "parameters": {"micro-batch": [1, 2], "zero": [0, 1]}, // optional value lists
//     "max_processes_per_task": 4,                // optional cap on MPI processes per task
//     "mpirun": ["mpirun", "--oversubscribe"],    // optional launcher commands
//     "srun": ["srun"],
//     "slurm": {"time": "01:00:00", "partition": "gpu", "sbatch_args": ["--qos=x"]}
//   }
//
// Every key of base, cases and parameters is a `perfsim simulate` option without its dashes;
// a value is a string or number (`--key value`), true (`--key`), false or null (left out),
// or an array (`--key v1 v2 ...`). Tasks are the cases (one empty case when none) times the
// cartesian product of the parameters; the last parameter varies fastest, cases slowest, so
// numbering follows the file and is stable. A task's setting: base, then its case, then its
// parameter values. "mpi_processes" is not passed to simulate: it fixes the task's MPI
// process count, which otherwise is the simulated world size (--ranks; tp*pp*dp of --model;
// --dlrm-ranks or the "ranks" of the --dlrm config), capped by max_processes_per_task.
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace perfsim::sweep {

// One option of a task, as text: its simulate arguments and a display value for tables.
struct TaskSetting {
  std::string key;                     // without dashes: "micro-batch"
  std::vector<std::string> arguments;  // e.g. {"--micro-batch", "2"}; empty when left out
  std::string display;                 // "2", "true", "a b", "" when left out
};

struct SweepTask {
  int index = 0;
  // Every setting of the task (base, case, parameters), keyed and ordered as in the file.
  std::vector<TaskSetting> settings;
  int simulated_ranks = 0;  // 0: not known from the settings (traces, default synthetic)
  int mpi_processes = 1;

  std::vector<std::string> simulate_arguments() const;
  // The display value of `key`, or "" when the task does not set it.
  std::string value_of(const std::string& key) const;
};

struct SlurmDefaults {
  std::string time = "01:00:00";
  std::string partition;
  std::vector<std::string> sbatch_args;
};

struct SweepSpec {
  std::string name;
  std::filesystem::path file;
  std::filesystem::path directory;
  // Keys that vary between tasks (cases and parameters), in file order: the merged table's
  // parameter columns.
  std::vector<std::string> varied_keys;
  std::vector<SweepTask> tasks;
  int max_processes_per_task = 0;  // 0: no cap
  std::vector<std::string> mpirun_command{"mpirun", "--oversubscribe"};
  std::vector<std::string> srun_command{"srun"};
  SlurmDefaults slurm;
};

// Parses and expands sweep JSON text; `source` names it in errors. Throws InputError naming
// the file and the field.
SweepSpec parse_sweep(std::string_view json_text, const std::string& source);
// Reads `file`; the directory is `directory_override` when not empty.
SweepSpec load_sweep(const std::filesystem::path& file,
                     const std::filesystem::path& directory_override = {});

}  // namespace perfsim::sweep
