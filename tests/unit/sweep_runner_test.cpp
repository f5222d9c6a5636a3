// Running sweep tasks (src/sweep/task_runner.hpp) with a stand-in launcher: a shell script that
// plays mpirun + simulate, so the runner's bookkeeping is tested without MPI.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "perfsim/error.hpp"
#include "sweep/child_process.hpp"
#include "sweep/task_files.hpp"
#include "sweep/task_runner.hpp"

namespace perfsim::sweep {
namespace {

namespace fs = std::filesystem;

// Writes the --results file like simulate, except for `--ranks 2`, which it refuses on stderr.
constexpr const char* kFakeLauncher = R"(prev=""; out=""; refuse=0
for a in "$@"; do
  [ "$prev" = --results ] && out="$a"
  [ "$prev" = --ranks ] && [ "$a" = 2 ] && refuse=1
  prev="$a"
done
if [ "$refuse" = 1 ]; then echo "perfsim: error: two ranks refused" >&2; exit 3; fi
echo "simulated" > "$out")";

// Asks its parent (the runner) to stop, as Slurm does at a time limit, then waits.
constexpr const char* kStoppingLauncher = R"(kill -TERM $PPID; sleep 20)";

class SweepRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("perfsim-sweep-runner-" + std::to_string(getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  SweepSpec spec_with_launcher(const char* script) {
    SweepSpec spec =
        parse_sweep(R"({"cases": [{"ranks": 1}, {"ranks": 2}, {"ranks": 1}]})", "r.json");
    spec.directory = directory_;
    spec.mpirun_command = {"sh", "-c", script, "fake-mpirun"};
    return spec;
  }
  RunSettings settings() const {
    RunSettings run;
    run.perfsim_binary = "/bin/true";
    run.environment = current_environment();
    return run;
  }

  fs::path directory_;
};

std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_F(SweepRunner, RecordsResultsAndFailuresAndLeavesNoRunningMarker) {
  const SweepSpec spec = spec_with_launcher(kFakeLauncher);
  int reported = 0;
  const std::vector<TaskOutcome> outcomes =
      run_tasks(spec, {0, 1, 2}, 2, settings(), [&](const TaskOutcome&) { ++reported; });
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(reported, 3);
  for (const TaskOutcome& outcome : outcomes) {
    EXPECT_EQ(outcome.succeeded, outcome.index != 1) << outcome.index;
    EXPECT_FALSE(fs::exists(task_paths(directory_, outcome.index).running));
    EXPECT_FALSE(fs::exists(task_paths(directory_, outcome.index).partial));
  }
  EXPECT_EQ(text_of(task_paths(directory_, 0).result), "simulated\n");
  EXPECT_EQ(task_state(directory_, 1), TaskState::kFailed);
  const TaskFailure failure = read_failure(task_paths(directory_, 1));
  EXPECT_EQ(failure.exit_status, 3);
  EXPECT_EQ(failure.stderr_tail, "perfsim: error: two ranks refused\n");
  EXPECT_NE(failure.command.find("fake-mpirun -n 2 /bin/true simulate --ranks 2 --results"),
            std::string::npos)
      << failure.command;

  // Running a failed task again clears its failure record first.
  SweepSpec fixed = spec;
  fixed.mpirun_command = {"sh", "-c", "touch \"$8\"", "fake-mpirun"};
  const auto again = run_tasks(fixed, {1}, 1, settings(), nullptr);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(again[0].succeeded);
  EXPECT_EQ(task_state(directory_, 1), TaskState::kDone);
  EXPECT_FALSE(fs::exists(task_paths(directory_, 1).failure));
}

TEST_F(SweepRunner, ATerminationSignalRecordsTheRunningTasksAsFailedAndStops) {
  const SweepSpec spec = spec_with_launcher(kStoppingLauncher);
  EXPECT_THROW(run_tasks(spec, {0, 1, 2}, 1, settings(), nullptr), RuntimeFailure);
  const TaskFailure failure = read_failure(task_paths(directory_, 0));
  EXPECT_EQ(failure.exit_status, 128 + SIGTERM);
  EXPECT_NE(failure.stderr_tail.find("received signal 15"), std::string::npos)
      << failure.stderr_tail;
  // The tasks after it never started.
  EXPECT_EQ(task_state(directory_, 1), TaskState::kPending);
  EXPECT_EQ(task_state(directory_, 2), TaskState::kPending);
}

TEST_F(SweepRunner, AMissingLauncherIsAFailedTaskWithTheReason) {
  SweepSpec spec = spec_with_launcher(kFakeLauncher);
  spec.mpirun_command = {"/no/such/mpirun"};
  const auto outcomes = run_tasks(spec, {0}, 1, settings(), nullptr);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_FALSE(outcomes[0].succeeded);
  EXPECT_EQ(outcomes[0].exit_status, 127);
  EXPECT_NE(read_failure(task_paths(directory_, 0)).stderr_tail.find("/no/such/mpirun"),
            std::string::npos);
  EXPECT_THROW(run_tasks(spec, {3}, 1, settings(), nullptr), InputError);
}

}  // namespace
}  // namespace perfsim::sweep
