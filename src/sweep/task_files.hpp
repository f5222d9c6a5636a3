#pragma once
// Where a sweep keeps each task's files, and what they say about its state. Status comes from
// the files alone, so it reads the same from a login node, a Slurm job or a laptop:
//   <dir>/results/task-000007.h5        done: the simulate results (written whole, then renamed)
//   <dir>/results/task-000007.failed    failed: exit status, command, stderr tail
//   <dir>/results/task-000007.running   started: host, pid and start time of `sweep run`
//   <dir>/logs/task-000007.{out,err}    the task's stdout and stderr
#include <filesystem>
#include <string>
#include <vector>

namespace perfsim::sweep {

// The run name every task's simulate writes under /runs/ in its result file.
inline constexpr const char* kTaskRunName = "task";

enum class TaskState {
  kPending,  // no file yet
  kRunning,  // started, not finished
  kLost,     // started on this host by a process that no longer exists
  kDone,
  kFailed,
};
const char* to_string(TaskState state);

struct TaskPaths {
  std::filesystem::path result;   // .h5
  std::filesystem::path partial;  // .h5.partial while simulate writes
  std::filesystem::path failure;  // .failed
  std::filesystem::path running;  // .running
  std::filesystem::path out_log;
  std::filesystem::path err_log;
};
TaskPaths task_paths(const std::filesystem::path& sweep_directory, int task_index);

// The failure record of a failed task.
struct TaskFailure {
  int exit_status = 0;  // the launcher's exit code; 128+N for signal N
  std::string command;
  std::string stderr_tail;
};
void write_failure(const TaskPaths& paths, const TaskFailure& failure);
TaskFailure read_failure(const TaskPaths& paths);  // throws RuntimeFailure when unreadable

// Marks a task started by this process (host name and pid).
void write_running_marker(const TaskPaths& paths);

TaskState task_state(const std::filesystem::path& sweep_directory, int task_index);

// Counts of each state over `task_count` tasks, and the indices not done.
struct SweepProgress {
  int pending = 0, running = 0, lost = 0, done = 0, failed = 0;
  std::vector<int> failed_indices;   // failed and lost
  std::vector<int> missing_indices;  // pending and running
};
SweepProgress sweep_progress(const std::filesystem::path& sweep_directory, int task_count);

// The last `max_lines` lines of a text file ("" when absent).
std::string file_tail(const std::filesystem::path& file, std::size_t max_lines);

}  // namespace perfsim::sweep
