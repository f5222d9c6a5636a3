#include "sweep/task_runner.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "perfsim/error.hpp"
#include "sweep/child_process.hpp"
#include "sweep/task_files.hpp"

namespace perfsim::sweep {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kStderrTailLines = 20;

struct Started {
  int index = 0;
  std::string command;
  Clock::time_point start;
};

void clear_task_files(const TaskPaths& paths) {
  for (const fs::path& path : {paths.result, paths.partial, paths.failure, paths.running})
    fs::remove(path);
}

TaskOutcome finish(const SweepSpec& spec, const Started& started, int exit_status) {
  const TaskPaths paths = task_paths(spec.directory, started.index);
  TaskOutcome outcome;
  outcome.index = started.index;
  outcome.exit_status = exit_status;
  outcome.wall_s = std::chrono::duration<double>(Clock::now() - started.start).count();
  if (exit_status == 0 && fs::exists(paths.partial)) {
    fs::rename(paths.partial, paths.result);
    outcome.succeeded = true;
  } else {
    TaskFailure failure;
    failure.exit_status = exit_status;
    failure.command = started.command;
    failure.stderr_tail = file_tail(paths.err_log, kStderrTailLines);
    if (exit_status == 0)
      failure.stderr_tail += "perfsim sweep: the task exited 0 but wrote no results file\n";
    write_failure(paths, failure);
    fs::remove(paths.partial);
  }
  fs::remove(paths.running);
  return outcome;
}

// The runner was told to stop (Slurm time limit, scancel, Ctrl-C): pass the signal on to the
// launchers, give them a grace period, then record each task as failed by that signal.
void stop_running_tasks(const SweepSpec& spec, std::map<pid_t, Started>& running, int signal_number,
                        std::vector<TaskOutcome>& outcomes,
                        const std::function<void(const TaskOutcome&)>& on_finish) {
  constexpr auto kGracePeriod = std::chrono::seconds(10);
  for (const auto& [pid, started] : running)
    kill(pid, signal_number);
  const auto deadline = Clock::now() + kGracePeriod;
  for (const auto& [pid, started] : running) {
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::ofstream(task_paths(spec.directory, started.index).err_log, std::ios::app)
        << "perfsim sweep: the runner received signal " << signal_number
        << " and stopped this task\n";
    outcomes.push_back(finish(spec, started, 128 + signal_number));
    if (on_finish)
      on_finish(outcomes.back());
  }
  running.clear();
}

}  // namespace

Launcher default_launcher(const std::vector<std::string>& environment) {
  for (const std::string& entry : environment) {
    if (entry.rfind("SLURM_JOB_ID=", 0) == 0)
      return Launcher::kSrun;
  }
  return Launcher::kMpirun;
}

std::vector<std::string> task_command(const SweepSpec& spec, const SweepTask& task,
                                      const RunSettings& settings) {
  const TaskPaths paths = task_paths(spec.directory, task.index);
  std::vector<std::string> command =
      settings.launcher == Launcher::kSrun ? spec.srun_command : spec.mpirun_command;
  command.push_back("-n");
  command.push_back(std::to_string(task.mpi_processes));
  command.push_back(settings.perfsim_binary.string());
  command.push_back("simulate");
  for (std::string& argument : task.simulate_arguments())
    command.push_back(std::move(argument));
  command.insert(command.end(), {"--results", paths.partial.string(), "--run-name", kTaskRunName});
  return command;
}

std::vector<TaskOutcome> run_tasks(const SweepSpec& spec, const std::vector<int>& indices, int jobs,
                                   const RunSettings& settings,
                                   const std::function<void(const TaskOutcome&)>& on_finish) {
  if (jobs < 1)
    throw InputError("--jobs", "", "need at least one job");
  for (int index : indices) {
    if (index < 0 || index >= static_cast<int>(spec.tasks.size())) {
      throw InputError(spec.file.string(), "task " + std::to_string(index),
                       "no such task (the sweep has " + std::to_string(spec.tasks.size()) +
                           " tasks, 0.." + std::to_string(spec.tasks.size() - 1) + ")");
    }
  }
  fs::create_directories(spec.directory / "results");
  fs::create_directories(spec.directory / "logs");
  std::vector<TaskOutcome> outcomes;
  std::map<pid_t, Started> running;
  std::size_t next = 0;
  CaughtTerminationSignals signals;
  while (next < indices.size() || !running.empty()) {
    while (next < indices.size() && static_cast<int>(running.size()) < jobs) {
      const int index = indices[next++];
      const TaskPaths paths = task_paths(spec.directory, index);
      clear_task_files(paths);
      write_running_marker(paths);
      const std::vector<std::string> command = task_command(spec, spec.tasks[index], settings);
      Started started{index, shell_join(command), Clock::now()};
      try {
        const pid_t pid =
            start_process(command, paths.out_log, paths.err_log, settings.environment);
        running.emplace(pid, started);
      } catch (const RuntimeFailure& error) {
        // The launcher itself is missing: a failed task with the reason, not a crash.
        std::ofstream(paths.err_log) << error.what() << "\n";
        outcomes.push_back(finish(spec, started, 127));
        if (on_finish)
          on_finish(outcomes.back());
      }
    }
    if (running.empty())
      continue;
    std::vector<pid_t> pids;
    for (const auto& [pid, started] : running)
      pids.push_back(pid);
    pid_t ended = 0;
    const int exit_status = wait_for_one_of(pids, ended, &signals);
    if (ended == 0) {
      stop_running_tasks(spec, running, exit_status, outcomes, on_finish);
      throw RuntimeFailure("perfsim sweep: stopped by signal " + std::to_string(exit_status) +
                           "; the tasks it was running are recorded as failed");
    }
    auto slot = running.find(ended);
    outcomes.push_back(finish(spec, slot->second, exit_status));
    running.erase(slot);
    if (on_finish)
      on_finish(outcomes.back());
  }
  return outcomes;
}

}  // namespace perfsim::sweep
