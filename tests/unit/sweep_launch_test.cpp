// How sweep tasks are launched: the command, the launcher's environment, the sbatch scripts
// (src/sweep/task_runner.hpp, child_process.hpp, slurm_submission.hpp).
#include <gtest/gtest.h>

#include "sweep/child_process.hpp"
#include "sweep/slurm_submission.hpp"
#include "sweep/task_runner.hpp"

namespace perfsim::sweep {
namespace {

using Args = std::vector<std::string>;

SweepSpec three_tasks() {
  SweepSpec spec = parse_sweep(
      R"({"name": "s", "base": {"compute-us": 5}, "cases": [{"ranks": 4}, {"ranks": 1}, {"ranks": 4}],
          "slurm": {"time": "00:05:00", "sbatch_args": ["--qos=low"]}})",
      "s.json");
  spec.directory = "/data/s";
  return spec;
}

TEST(SweepLaunch, TaskCommandRunsSimulateWithItsProcessCountAndResultFile) {
  const SweepSpec spec = three_tasks();
  RunSettings settings;
  settings.perfsim_binary = "/opt/perfsim";
  EXPECT_EQ(task_command(spec, spec.tasks[0], settings),
            (Args{"mpirun", "--oversubscribe", "-n", "4", "/opt/perfsim", "simulate",
                  "--compute-us", "5", "--ranks", "4", "--results",
                  "/data/s/results/task-000000.h5.partial", "--run-name", "task"}));
  settings.launcher = Launcher::kSrun;
  EXPECT_EQ(task_command(spec, spec.tasks[1], settings)[0], "srun");
  EXPECT_EQ(task_command(spec, spec.tasks[1], settings)[2], "1");
}

TEST(SweepLaunch, LauncherSeesTheUsersEnvironmentWithoutThisProcesssMpiJob) {
  const Args environment{"PATH=/usr/bin",
                         "OMPI_MCA_mpi_yield_when_idle=1",
                         "OMPI_ALLOW_RUN_AS_ROOT=1",
                         "OMPI_MCA_ess=singleton",
                         "OMPI_MCA_orte_launch=1",
                         "PMIX_RANK=0",
                         "OMPI_COMMAND=./perfsim",
                         "SLURM_JOB_ID=12"};
  EXPECT_EQ(launcher_environment(environment),
            (Args{"PATH=/usr/bin", "OMPI_MCA_mpi_yield_when_idle=1", "OMPI_ALLOW_RUN_AS_ROOT=1",
                  "SLURM_JOB_ID=12"}));
  EXPECT_EQ(default_launcher(environment), Launcher::kSrun);
  EXPECT_EQ(default_launcher({"PATH=/usr/bin"}), Launcher::kMpirun);
}

TEST(SweepLaunch, SlurmArraysGroupTasksByProcessCountWithAThrottleAndAMergeJob) {
  const SweepSpec spec = three_tasks();
  SubmitOptions options;
  options.task_indices = {0, 1, 2};
  options.max_parallel = 2;
  options.perfsim_binary = "/opt/perfsim";
  options.sweep_file = "/data/s/sweep.json";
  options.directory = "/data/s";
  options.working_directory = "/home/u";
  const SubmissionScripts scripts = slurm_scripts(spec, options);
  ASSERT_EQ(scripts.arrays.size(), 2u);
  EXPECT_EQ(scripts.arrays[0].mpi_processes, 1);
  EXPECT_EQ(scripts.arrays[0].tasks, (std::vector<int>{1}));
  const ArrayScript& wide = scripts.arrays[1];
  EXPECT_EQ(wide.tasks, (std::vector<int>{0, 2}));
  for (const char* line :
       {"#SBATCH --ntasks=4\n", "#SBATCH --array=0-1%2\n", "#SBATCH --time=00:05:00\n",
        "#SBATCH --chdir=/home/u\n", "#SBATCH --qos=low\n", "tasks=(0 2)\n",
        "exec /opt/perfsim sweep run /data/s/sweep.json --dir /data/s --task "
        "\"${tasks[$SLURM_ARRAY_TASK_ID]}\"\n"}) {
    EXPECT_NE(wide.text.find(line), std::string::npos) << line << " not in\n" << wide.text;
  }
  EXPECT_NE(
      scripts.merge_text.find("exec /opt/perfsim sweep merge /data/s/sweep.json --dir /data/s"),
      std::string::npos);

  options.max_array_size = 1;
  EXPECT_EQ(slurm_scripts(spec, options).arrays.size(), 3u);
  EXPECT_EQ(parse_job_id("4711;cluster\n"), "4711");
}

TEST(SweepLaunch, ShellJoinQuotesWhatAShellWouldSplit) {
  EXPECT_EQ(shell_join({"a", "b c", "it's", ""}), "a 'b c' 'it'\\''s' ''");
}

}  // namespace
}  // namespace perfsim::sweep
