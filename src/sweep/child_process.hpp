#pragma once
// Starting and waiting for the launcher processes a sweep runs (mpirun, srun, sbatch).
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
// Waits until one of `pids` ends; sets `ended` to it and returns its exit code as above.
// Other children of this process (Open MPI's own helpers) are left alone.
int wait_for_one_of(const std::vector<pid_t>& pids, pid_t& ended);

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
