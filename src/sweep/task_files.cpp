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

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// This boot of the machine: a marker from an earlier boot belongs to a process that is gone.
std::string this_boot() {
  return first_line("/proc/sys/kernel/random/boot_id");
}

// The state letter and start time (clock ticks after boot) of a process, from
// /proc/PID/stat; empty when there is no such process. The command name (field 2) may hold
// spaces and parentheses, so fields are counted after its closing parenthesis.
struct ProcessStat {
  char state = 0;
  std::string start_ticks;
};
ProcessStat process_stat(long pid) {
  const std::string line = first_line("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t name_end = line.rfind(')');
  if (name_end == std::string::npos)
    return {};
  std::istringstream fields(line.substr(name_end + 1));
  ProcessStat stat;
  fields >> stat.state;
  std::string field;
  for (int index = 4; index < 22 && fields >> field; ++index) {
  }
  fields >> stat.start_ticks;  // field 22
  return stat;
}

// A running marker written on this host whose process is gone: the task died without a
// record (killed with its process group, node rebooted). A killed runner that its parent has
// not reaped yet is a zombie, and its pid may be reused by an unrelated process: both count
// as gone. On another host we cannot tell, so the task stays "running".
bool marker_is_stale(const fs::path& marker) {
  std::ifstream in(marker);
  std::string key, host, boot, start_ticks;
  long pid = 0;
  while (in >> key) {
    if (key == "host:")
      in >> host;
    else if (key == "pid:")
      in >> pid;
    else if (key == "boot_id:")
      in >> boot;
    else if (key == "start_ticks:")
      in >> start_ticks;
  }
  if (host != this_host() || pid <= 0)
    return false;
  if (!boot.empty() && !this_boot().empty() && boot != this_boot())
    return true;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
    return true;
  const ProcessStat stat = process_stat(pid);
  if (stat.state == 0)  // no /proc (not Linux): the process exists
    return false;
  if (stat.state == 'Z' || stat.state == 'X')
    return true;
  return !start_ticks.empty() && stat.start_ticks != start_ticks;
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
  // Tell this process from a later one with the same pid (see marker_is_stale).
  const std::string boot = this_boot();
  const ProcessStat self = process_stat(getpid());
  if (!boot.empty())
    out << "boot_id: " << boot << "\n";
  if (!self.start_ticks.empty())
    out << "start_ticks: " << self.start_ticks << "\n";
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
