#include "sweep/task_files.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <deque>
#include <fstream>
#include <sstream>

#include "io/atomic_file.hpp"
#include "perfsim/error.hpp"

namespace perfsim::sweep {
namespace {

namespace fs = std::filesystem;

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0)
    return "unknown";
  return name;
}

// A running marker written on this host whose process is gone: the task died without a
// record (killed, node rebooted). On another host we cannot tell, so it stays "running".
bool marker_is_stale(const fs::path& marker) {
  std::ifstream in(marker);
  std::string key, host;
  long pid = 0;
  while (in >> key) {
    if (key == "host:")
      in >> host;
    else if (key == "pid:")
      in >> pid;
  }
  if (host != this_host() || pid <= 0)
    return false;
  return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

const char* to_string(TaskState state) {
  switch (state) {
    case TaskState::kPending:
      return "pending";
    case TaskState::kRunning:
      return "running";
    case TaskState::kLost:
      return "lost";
    case TaskState::kDone:
      return "done";
    case TaskState::kFailed:
      return "failed";
  }
  return "?";
}

TaskPaths task_paths(const fs::path& sweep_directory, int task_index) {
  char stem[32];
  std::snprintf(stem, sizeof(stem), "task-%06d", task_index);
  const fs::path results = sweep_directory / "results";
  const fs::path logs = sweep_directory / "logs";
  const std::string name = stem;
  return {results / (name + ".h5"),     results / (name + ".h5.partial"),
          results / (name + ".failed"), results / (name + ".running"),
          logs / (name + ".out"),       logs / (name + ".err")};
}

void write_failure(const TaskPaths& paths, const TaskFailure& failure) {
  fs::create_directories(paths.failure.parent_path());
  io::write_file_atomically(paths.failure, "exit_status: " + std::to_string(failure.exit_status) +
                                               "\ncommand: " + failure.command +
                                               "\nstderr_tail:\n" + failure.stderr_tail);
}

TaskFailure read_failure(const TaskPaths& paths) {
  std::ifstream in(paths.failure);
  if (!in)
    throw RuntimeFailure(paths.failure.string() + ": cannot read the failure record");
  TaskFailure failure;
  std::string line;
  enum class Part { kHead, kCommand, kTail } part = Part::kHead;
  while (std::getline(in, line)) {
    if (part == Part::kTail) {
      failure.stderr_tail += line + "\n";
    } else if (line == "stderr_tail:") {
      part = Part::kTail;
    } else if (part == Part::kCommand) {
      failure.command += "\n" + line;  // a quoted argument with newlines
    } else if (line.rfind("exit_status: ", 0) == 0) {
      failure.exit_status = std::atoi(line.c_str() + 13);
    } else if (line.rfind("command: ", 0) == 0) {
      failure.command = line.substr(9);
      part = Part::kCommand;
    }
  }
  return failure;
}

void write_running_marker(const TaskPaths& paths) {
  fs::create_directories(paths.running.parent_path());
  std::ofstream out(paths.running);
  out << "host: " << this_host() << "\npid: " << getpid()
      << "\nstarted_unix_s: " << std::time(nullptr) << "\n";
  if (!out)
    throw RuntimeFailure(paths.running.string() + ": cannot write the running marker");
}

TaskState task_state(const fs::path& sweep_directory, int task_index) {
  const TaskPaths paths = task_paths(sweep_directory, task_index);
  if (fs::exists(paths.result))
    return TaskState::kDone;
  if (fs::exists(paths.failure))
    return TaskState::kFailed;
  if (fs::exists(paths.running))
    return marker_is_stale(paths.running) ? TaskState::kLost : TaskState::kRunning;
  return TaskState::kPending;
}

SweepProgress sweep_progress(const fs::path& sweep_directory, int task_count) {
  SweepProgress progress;
  for (int index = 0; index < task_count; ++index) {
    switch (task_state(sweep_directory, index)) {
      case TaskState::kPending:
        ++progress.pending;
        progress.missing_indices.push_back(index);
        break;
      case TaskState::kRunning:
        ++progress.running;
        progress.missing_indices.push_back(index);
        break;
      case TaskState::kLost:
        ++progress.lost;
        progress.failed_indices.push_back(index);
        break;
      case TaskState::kDone:
        ++progress.done;
        break;
      case TaskState::kFailed:
        ++progress.failed;
        progress.failed_indices.push_back(index);
        break;
    }
  }
  return progress;
}

std::string file_tail(const fs::path& file, std::size_t max_lines) {
  std::ifstream in(file);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > max_lines)
      lines.pop_front();
  }
  std::string out;
  for (const std::string& kept : lines)
    out += kept + "\n";
  return out;
}

}  // namespace perfsim::sweep
