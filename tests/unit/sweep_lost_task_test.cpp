// A task whose runner died without a record is "lost" (rerun by `sweep run --all`), also when
// the runner is a zombie its parent has not reaped yet, or its pid belongs to another process.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sweep/task_files.hpp"

namespace perfsim::sweep {
namespace {

namespace fs = std::filesystem;

class LostTask : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("perfsim_lost_" + std::to_string(getpid()));
    fs::remove_all(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  // The marker `pid` would have written (write_running_marker runs in that process).
  void write_marker_from(pid_t pid) {
    const TaskPaths paths = task_paths(directory_, 0);
    write_running_marker(paths);  // this process's host, boot and start time...
    std::ifstream in(paths.running);
    std::ostringstream text;
    text << in.rdbuf();
    std::string marker = text.str();
    const std::size_t at = marker.find("pid: ");
    ASSERT_NE(at, std::string::npos) << marker;
    std::size_t end = at + 5;
    while (end < marker.size() && std::isdigit(static_cast<unsigned char>(marker[end])))
      ++end;
    marker.replace(at, end - at, "pid: " + std::to_string(pid));  // ...another's pid
    std::ofstream(paths.running) << marker;
  }

  fs::path directory_;
};

TEST_F(LostTask, LiveRunnerIsRunning) {
  write_running_marker(task_paths(directory_, 0));
  EXPECT_EQ(task_state(directory_, 0), TaskState::kRunning);
}

TEST_F(LostTask, KilledRunnerNotYetReapedIsLost) {
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  // A marker without start time (as older perfsim wrote): only the zombie state tells.
  kill(child, SIGKILL);
  siginfo_t info{};
  waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT);  // dead, still a zombie
  const TaskPaths paths = task_paths(directory_, 0);
  fs::create_directories(paths.running.parent_path());
  std::ofstream(paths.running) << "host: " << [] {
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    return std::string(name);
  }() << "\npid: " << child << "\n";
  EXPECT_EQ(task_state(directory_, 0), TaskState::kLost);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(task_state(directory_, 0), TaskState::kLost);
}

TEST_F(LostTask, PidOfAnotherProcessIsLost) {
  // The marker says this process's start time but names pid 1 (started at boot, long before
  // this test): a pid reused by another process.
  write_marker_from(1);
  EXPECT_EQ(task_state(directory_, 0), TaskState::kLost);
}

}  // namespace
}  // namespace perfsim::sweep
