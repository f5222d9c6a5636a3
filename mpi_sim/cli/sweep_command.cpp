// perfsim sweep {plan,run,merge,status,submit}: many `perfsim simulate` runs from one sweep
// file (src/sweep/sweep_spec.hpp), locally or as Slurm job arrays. Rank 0 only: each task is
// its own mpirun/srun.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <variant>

#include "mpi_sim/cli/command_line.hpp"
#include "perfsim/error.hpp"
#include "sweep/child_process.hpp"
#include "sweep/slurm_submission.hpp"
#include "sweep/sweep_json.hpp"
#include "sweep/sweep_merge.hpp"
#include "sweep/sweep_plan.hpp"
#include "sweep/table_text.hpp"
#include "sweep/task_files.hpp"
#include "sweep/task_runner.hpp"

namespace perfsim::cli {
namespace {

namespace fs = std::filesystem;
using sweep::SweepSpec;

// README "Exit codes": the sweep ran, but not every task succeeded.
constexpr int kExitIncomplete = 4;

struct SweepArguments {
  std::string file;
  std::string directory;
};

struct RunArguments {
  std::vector<int> tasks;
  bool all = false;
  bool force = false;
  int jobs = 1;
  std::string launcher = "auto";
};

struct SubmitArguments {
  int max_parallel = 0;
  std::string time;
  std::string partition;
  bool only_failed = false;
  bool dry_run = false;
  std::size_t max_array_size = 1000;
};

void add_sweep_arguments(CLI::App& sub, SweepArguments& arguments) {
  sub.add_option("file", arguments.file, "sweep file (JSON)")->required();
  sub.add_option("--dir", arguments.directory,
                 "sweep directory (default: the file's \"directory\", else sweep-<name>)");
}

// The sweep, with its directory tied to this file's text (see write_plan).
SweepSpec load(const SweepArguments& arguments) {
  SweepSpec spec = sweep::load_sweep(arguments.file, arguments.directory);
  sweep::write_plan(spec);
  return spec;
}

std::string join_indices(const std::vector<int>& indices) {
  std::string out;
  for (int index : indices)
    out += (out.empty() ? "" : ", ") + std::to_string(index);
  return out;
}

int run_plan(const SweepArguments& arguments) {
  const SweepSpec spec = load(arguments);
  constexpr std::size_t kPrintedTasks = 20;
  std::cout << spec.tasks.size() << " tasks\n";
  h5::ColumnTable table = sweep::task_table(spec);
  if (spec.tasks.size() > kPrintedTasks) {
    // The first tasks only: the whole table is in tasks.csv.
    for (auto& [name, column] : table.columns)
      std::visit([&](auto& values) { values.resize(kPrintedTasks); }, column);
  }
  std::cout << sweep::table_to_text(table, {});
  if (spec.tasks.size() > kPrintedTasks)
    std::cout << "(" << spec.tasks.size() - kPrintedTasks << " more tasks)\n";
  std::cout << "task table: " << (spec.directory / "tasks.csv").string() << "\n";
  return 0;
}

int run_run(const SweepArguments& arguments, const RunArguments& run) {
  const SweepSpec spec = load(arguments);
  if (run.all == !run.tasks.empty())
    throw InputError("sweep run", "", "give either --task N or --all");
  sweep::RunSettings settings;
  const std::vector<std::string> environment = sweep::current_environment();
  settings.environment = sweep::launcher_environment(environment);
  settings.perfsim_binary = sweep::current_executable();
  settings.launcher = run.launcher == "srun"     ? sweep::Launcher::kSrun
                      : run.launcher == "mpirun" ? sweep::Launcher::kMpirun
                                                 : sweep::default_launcher(environment);

  std::vector<int> indices = run.tasks;
  int skipped_done = 0, skipped_running = 0, lost = 0;
  if (run.all) {
    for (const sweep::SweepTask& task : spec.tasks) {
      const sweep::TaskState state = sweep::task_state(spec.directory, task.index);
      if (!run.force && state == sweep::TaskState::kDone)
        ++skipped_done;
      else if (!run.force && state == sweep::TaskState::kRunning)
        ++skipped_running;  // by another runner (a Slurm job, another shell)
      else {
        lost += state == sweep::TaskState::kLost ? 1 : 0;
        indices.push_back(task.index);
      }
    }
    if (skipped_done > 0)
      std::cout << "skipping " << skipped_done << " tasks already done (--force reruns them)\n";
    if (lost > 0)
      std::cout << "rerunning " << lost << " lost tasks (their runner on this host is gone)\n";
    if (skipped_running > 0) {
      std::cout << "skipping " << skipped_running
                << " tasks another runner is running (--force reruns them)\n";
    }
  }
  std::cout << "running " << indices.size() << " tasks with "
            << (settings.launcher == sweep::Launcher::kSrun ? "srun" : "mpirun") << ", " << run.jobs
            << " at a time" << std::endl;
  const auto start = std::chrono::steady_clock::now();
  int failed = 0;
  sweep::run_tasks(spec, indices, run.jobs, settings, [&](const sweep::TaskOutcome& outcome) {
    const sweep::TaskPaths paths = sweep::task_paths(spec.directory, outcome.index);
    std::printf("task %d: %s in %.2f s", outcome.index, outcome.succeeded ? "done" : "FAILED",
                outcome.wall_s);
    if (!outcome.succeeded) {
      ++failed;
      std::printf(" (exit %d; see %s)", outcome.exit_status, paths.failure.c_str());
    }
    std::printf("\n");
    std::fflush(stdout);
  });
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%zu tasks run, %d failed, %.2f s wall\n", indices.size(), failed, wall_s);
  return failed == 0 ? 0 : kExitIncomplete;
}

int merge_exit_status(const sweep::MergedSweep& merged) {
  return merged.missing_indices.empty() && merged.failed_indices.empty() ? 0 : kExitIncomplete;
}

// `format`: text (the table's main columns and what is missing or failed), json (schema
// perfsim-sweep/1, every column) or csv (merged.csv's content); the exit status says alike
// whether every task is in.
int run_merge(const SweepArguments& arguments, const std::string& format) {
  const SweepSpec spec = load(arguments);
  const sweep::MergedSweep merged = sweep::merge_sweep(spec);
  sweep::write_merged(spec, merged);
  if (format == "json") {
    std::cout << sweep::merged_to_json(spec, merged);
    return merge_exit_status(merged);
  }
  if (format == "csv") {
    std::cout << sweep::table_to_csv(merged.table);
    return merge_exit_status(merged);
  }
  std::vector<std::string> columns{"task", "state"};
  columns.insert(columns.end(), spec.varied_keys.begin(), spec.varied_keys.end());
  columns.insert(columns.end(), {"iteration_us", "comm_time_us", "exposed_comm_us"});
  std::cout << sweep::table_to_text(merged.table, columns);
  std::cout << "merged " << spec.tasks.size()
            << " tasks: " << (spec.directory / "merged.h5").string() << " (" << sweep::kMergedGroup
            << "), " << (spec.directory / "merged.csv").string() << "\n";
  if (!merged.missing_indices.empty()) {
    std::cout << "missing tasks (" << merged.missing_indices.size()
              << "): " << join_indices(merged.missing_indices) << "\n";
  }
  if (!merged.failed_indices.empty()) {
    std::cout << "failed tasks (" << merged.failed_indices.size()
              << "): " << join_indices(merged.failed_indices) << "\n";
    for (const auto& [index, failure] : merged.failures) {
      std::cout << "  task " << index << ": exit " << failure.exit_status << "\n";
      std::cout << failure.stderr_tail;
    }
  }
  return merge_exit_status(merged);
}

int run_status(const SweepArguments& arguments) {
  const SweepSpec spec = load(arguments);
  const sweep::SweepProgress progress =
      sweep::sweep_progress(spec.directory, static_cast<int>(spec.tasks.size()));
  std::cout << spec.name << ": " << spec.tasks.size() << " tasks: " << progress.done << " done, "
            << progress.running << " running, " << progress.failed << " failed, " << progress.lost
            << " lost, " << progress.pending << " pending\n";
  if (!progress.failed_indices.empty())
    std::cout << "failed or lost: " << join_indices(progress.failed_indices) << "\n";
  return 0;
}

int run_submit(const SweepArguments& arguments, const SubmitArguments& submit) {
  const SweepSpec spec = load(arguments);
  const fs::path copy = fs::absolute(sweep::write_plan(spec));
  sweep::SubmitOptions options;
  options.max_parallel = submit.max_parallel;
  options.time = submit.time;
  options.partition = submit.partition;
  options.max_array_size = submit.max_array_size;
  options.perfsim_binary = sweep::current_executable();
  options.sweep_file = copy;
  options.directory = fs::absolute(spec.directory);
  options.working_directory = fs::current_path();
  if (submit.only_failed) {
    options.task_indices =
        sweep::sweep_progress(spec.directory, static_cast<int>(spec.tasks.size())).failed_indices;
    if (options.task_indices.empty()) {
      std::cout << "no failed task to submit\n";
      return 0;
    }
  } else {
    for (const sweep::SweepTask& task : spec.tasks)
      options.task_indices.push_back(task.index);
  }
  const sweep::SubmissionScripts scripts = sweep::slurm_scripts(spec, options);
  sweep::write_scripts(scripts);
  if (submit.dry_run) {
    for (const auto& array : scripts.arrays)
      std::cout << "would submit " << array.path.string() << "\n";
    std::cout << "would submit " << scripts.merge_path.string() << " (afterany)\n";
    return 0;
  }
  const std::vector<std::string> environment =
      sweep::launcher_environment(sweep::current_environment());
  auto sbatch = [&](std::vector<std::string> command) {
    const sweep::CapturedRun run = sweep::run_captured(command, environment);
    if (run.exit_status != 0) {
      throw RuntimeFailure("`" + sweep::shell_join(command) + "` failed (exit " +
                           std::to_string(run.exit_status) + "): " + run.err);
    }
    return sweep::parse_job_id(run.out);
  };
  std::string dependency = "afterany";
  for (const auto& array : scripts.arrays) {
    const std::string job = sbatch({"sbatch", "--parsable", array.path.string()});
    dependency += ":" + job;
    std::cout << "submitted job array " << job << ": " << array.tasks.size() << " tasks x "
              << array.mpi_processes << " MPI processes (" << array.path.string() << ")\n";
  }
  const std::string merge_job =
      sbatch({"sbatch", "--parsable", "--dependency=" + dependency, scripts.merge_path.string()});
  std::cout << "submitted merge job " << merge_job << " (" << dependency << ")\n";
  std::cout << "progress: perfsim sweep status " << copy.string() << " --dir "
            << options.directory.string() << "\n";
  return 0;
}

}  // namespace

void add_sweep_command(CLI::App& app, CommandRegistry& registry) {
  CLI::App* sweep = app.add_subcommand(
      "sweep",
      "Sweeps: many simulate runs from one sweep file (base scenario, cases, parameter lists), "
      "run locally or submitted as Slurm job arrays, merged into one table.");
  sweep->require_subcommand(1);

  auto plan_arguments = std::make_shared<SweepArguments>();
  CLI::App* plan = sweep->add_subcommand("plan", "Expand the sweep into numbered tasks");
  add_sweep_arguments(*plan, *plan_arguments);
  registry.add(plan, RankScope::kRankZeroOnly,
               [plan_arguments](const CommandContext&) { return run_plan(*plan_arguments); });

  auto run_arguments = std::make_shared<SweepArguments>();
  auto run_options = std::make_shared<RunArguments>();
  CLI::App* run = sweep->add_subcommand(
      "run", "Run tasks (each under mpirun, or srun inside a Slurm allocation)");
  add_sweep_arguments(*run, *run_arguments);
  run->add_option("--task", run_options->tasks, "task indices to run");
  run->add_flag("--all", run_options->all, "run every task not done yet");
  run->add_flag("--force", run_options->force, "with --all: rerun tasks already done");
  run->add_option("--jobs,-j", run_options->jobs, "tasks at a time")->check(CLI::PositiveNumber);
  run->add_option("--launcher", run_options->launcher,
                  "auto (srun inside a Slurm allocation, else mpirun), mpirun or srun")
      ->check(CLI::IsMember({"auto", "mpirun", "srun"}));
  registry.add(run, RankScope::kRankZeroOnly, [run_arguments, run_options](const CommandContext&) {
    return run_run(*run_arguments, *run_options);
  });

  auto merge_arguments = std::make_shared<SweepArguments>();
  CLI::App* merge = sweep->add_subcommand(
      "merge", "Merge task results into merged.h5 (/sweep/tasks) and merged.csv");
  add_sweep_arguments(*merge, *merge_arguments);
  auto merge_format = std::make_shared<std::string>("text");
  merge
      ->add_option("--format", *merge_format,
                   "standard output: text (main columns, missing and failed tasks), json (schema "
                   "perfsim-sweep/1, docs/output-formats.md) or csv (every column, as merged.csv)")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->capture_default_str();
  registry.add(merge, RankScope::kRankZeroOnly,
               [merge_arguments, merge_format](const CommandContext&) {
                 return run_merge(*merge_arguments, *merge_format);
               });

  auto status_arguments = std::make_shared<SweepArguments>();
  CLI::App* status =
      sweep->add_subcommand("status", "Count done, running and failed tasks from the files");
  add_sweep_arguments(*status, *status_arguments);
  registry.add(status, RankScope::kRankZeroOnly,
               [status_arguments](const CommandContext&) { return run_status(*status_arguments); });

  auto submit_arguments = std::make_shared<SweepArguments>();
  auto submit_options = std::make_shared<SubmitArguments>();
  CLI::App* submit = sweep->add_subcommand(
      "submit", "Submit sbatch job arrays for the tasks and a dependent merge job");
  add_sweep_arguments(*submit, *submit_arguments);
  submit
      ->add_option("--max-parallel", submit_options->max_parallel,
                   "array tasks running at once, per array (--array=...%K)")
      ->check(CLI::PositiveNumber);
  submit->add_option("--time", submit_options->time,
                     "time limit per task (default: the sweep file's slurm.time, else 01:00:00)");
  submit->add_option("--partition", submit_options->partition,
                     "Slurm partition (default: the cluster's default partition)");
  submit->add_flag("--only-failed", submit_options->only_failed,
                   "submit only the failed (or lost) tasks again");
  submit->add_flag("--dry-run", submit_options->dry_run, "write the scripts, submit nothing");
  submit
      ->add_option("--max-array-size", submit_options->max_array_size,
                   "split arrays above this many tasks (Slurm MaxArraySize - 1)")
      ->check(CLI::PositiveNumber);
  registry.add(submit, RankScope::kRankZeroOnly,
               [submit_arguments, submit_options](const CommandContext&) {
                 return run_submit(*submit_arguments, *submit_options);
               });
}

}  // namespace perfsim::cli
