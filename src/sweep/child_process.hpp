#pragma once
// Starting and waiting for the launcher processes a sweep runs (mpirun, srun, sbatch).
#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace perfsim::sweep {

// The environment for a launcher started from inside perfsim: `environment` (NAME=value
// entries) without what MPI_Init of this process added for itself (PMIX_*, and Open MPI's
// OMPI_* launch variables: a nested mpirun that sees them believes it runs inside a job and
// fails). The user's own settings (OMPI_MCA_mpi_yield_when_idle, OMPI_ALLOW_RUN_AS_ROOT, ...)
// are kept.
std::vector<std::string> launcher_environment(const std::vector<std::string>& environment);
// This process's environment as NAME=value entries.
std::vector<std::string> current_environment();

// Starts `argv` with stdout and stderr sent to the given files (created or truncated) and the
// given environment. Throws RuntimeFailure when the process cannot be started.
pid_t start_process(const std::vector<std::string>& argv, const std::filesystem::path& out_file,
                    const std::filesystem::path& err_file,
                    const std::vector<std::string>& environment);

// Waits for `pid`; returns its exit code, or 128 + N when signal N ended it.
int wait_for_exit(pid_t pid);
// While alive, SIGTERM, SIGINT and SIGHUP are caught and remembered instead of ending the
// process, so a runner stopped by Slurm (time limit, scancel) or Ctrl-C can record what it was
// running. A handler, not a blocked mask: MPI_Init has started threads that would otherwise
// take a process-directed signal and die of it. Processes started meanwhile get default
// handling back (start_process). One instance at a time.
class CaughtTerminationSignals {
 public:
  CaughtTerminationSignals();
  ~CaughtTerminationSignals();
  CaughtTerminationSignals(const CaughtTerminationSignals&) = delete;
  CaughtTerminationSignals& operator=(const CaughtTerminationSignals&) = delete;
  // Takes the termination signal caught since the last call: its number, or 0.
  int take_pending();

 private:
  struct sigaction previous_[3];
};

// Waits until one of `pids` ends; sets `ended` to it and returns its exit code as above.
// Other children of this process (Open MPI's own helpers) are left alone. With `signals`,
// returns early when a termination signal arrived: `ended` = 0, the result is the signal.
int wait_for_one_of(const std::vector<pid_t>& pids, pid_t& ended,
                    CaughtTerminationSignals* signals = nullptr);

// Runs `argv` to completion, capturing stdout and stderr (for sbatch and friends).
struct CapturedRun {
  int exit_status = 0;
  std::string out;
  std::string err;
};
CapturedRun run_captured(const std::vector<std::string>& argv,
                         const std::vector<std::string>& environment);

// The absolute path of the running executable (Linux /proc/self/exe).
std::filesystem::path current_executable();

// argv joined with spaces, each element quoted for a POSIX shell where needed.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace perfsim::sweep
