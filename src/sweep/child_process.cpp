#include "sweep/child_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "perfsim/error.hpp"

extern char** environ;

namespace perfsim::sweep {
namespace {

constexpr int kTerminationSignals[] = {SIGTERM, SIGINT, SIGHUP};
// The one piece of global state: a signal handler can only talk through a lock-free atomic.
std::atomic<int> caught_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

bool starts_with(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

// What Open MPI's launcher (mpirun, or MPI_Init of a singleton) puts into a process's
// environment to describe the job it belongs to.
bool is_launch_variable(const std::string& entry) {
  static const char* const kPrefixes[] = {"PMIX_",
                                          "OMPI_COMM_WORLD_",
                                          "OMPI_MCA_orte_",
                                          "OMPI_MCA_ess",
                                          "OMPI_MCA_pmix",
                                          "OMPI_APP_CTX_",
                                          "OMPI_COMMAND=",
                                          "OMPI_ARGV=",
                                          "OMPI_NUM_APP_CTX=",
                                          "OMPI_FIRST_RANKS=",
                                          "OMPI_UNIVERSE_SIZE=",
                                          "OMPI_FILE_LOCATION=",
                                          "OMPI_MCA_initial_wdir=",
                                          "OMPI_MCA_shmem_RUNTIME_QUERY_hint=",
                                          "OMPI_MCA_plm_",
                                          "OMPI_MCA_state_",
                                          "OMPI_MCA_routed",
                                          "OMPI_MCA_rmaps_ppr_"};
  for (const char* prefix : kPrefixes) {
    if (starts_with(entry, prefix))
      return true;
  }
  return false;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int decode_status(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace

std::vector<std::string> launcher_environment(const std::vector<std::string>& environment) {
  std::vector<std::string> kept;
  for (const std::string& entry : environment) {
    if (!is_launch_variable(entry))
      kept.push_back(entry);
  }
  return kept;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry)
    out.emplace_back(*entry);
  return out;
}

pid_t start_process(const std::vector<std::string>& argv, const std::filesystem::path& out_file,
                    const std::filesystem::path& err_file,
                    const std::vector<std::string>& environment) {
  if (argv.empty())
    throw RuntimeFailure("start_process: empty command");
  std::vector<char*> args, env;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  for (const std::string& entry : environment)
    env.push_back(const_cast<char*>(entry.c_str()));
  env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_file.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_file.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // The child starts with nothing blocked and default handling of the termination signals,
  // whatever this process catches (CaughtTerminationSignals).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int signal_number : kTerminationSignals)
    sigaddset(&defaults, signal_number);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    throw RuntimeFailure("cannot start " + argv[0] + ": " + std::strerror(error));
  }
  return pid;
}

int wait_for_exit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw RuntimeFailure(std::string("waitpid: ") + std::strerror(errno));
  }
  return decode_status(status);
}

CaughtTerminationSignals::CaughtTerminationSignals() {
  static_assert(sizeof(previous_) / sizeof(previous_[0]) == std::size(kTerminationSignals));
  caught_signal.store(0);
  struct sigaction action {};
  action.sa_handler = [](int signal_number) { caught_signal.store(signal_number); };
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < std::size(kTerminationSignals); ++i)
    sigaction(kTerminationSignals[i], &action, &previous_[i]);
}

CaughtTerminationSignals::~CaughtTerminationSignals() {
  for (std::size_t i = 0; i < std::size(kTerminationSignals); ++i)
    sigaction(kTerminationSignals[i], &previous_[i], nullptr);
}

int CaughtTerminationSignals::take_pending() {
  return caught_signal.exchange(0);
}

int wait_for_one_of(const std::vector<pid_t>& pids, pid_t& ended,
                    CaughtTerminationSignals* signals) {
  constexpr auto kPollInterval = std::chrono::milliseconds(20);
  if (pids.empty())
    throw RuntimeFailure("wait_for_one_of: no process to wait for");
  while (true) {
    if (signals != nullptr) {
      if (const int signal_number = signals->take_pending(); signal_number != 0) {
        ended = 0;
        return signal_number;
      }
    }
    for (pid_t pid : pids) {
      int status = 0;
      const pid_t result = waitpid(pid, &status, WNOHANG);
      if (result == pid) {
        ended = pid;
        return decode_status(status);
      }
      if (result < 0 && errno != EINTR)
        throw RuntimeFailure(std::string("waitpid: ") + std::strerror(errno));
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

CapturedRun run_captured(const std::vector<std::string>& argv,
                         const std::vector<std::string>& environment) {
  char pattern[] = "/tmp/perfsim-capture-XXXXXX";
  if (mkdtemp(pattern) == nullptr)
    throw RuntimeFailure(std::string("mkdtemp: ") + std::strerror(errno));
  const std::filesystem::path directory = pattern;
  CapturedRun run;
  try {
    run.exit_status =
        wait_for_exit(start_process(argv, directory / "out", directory / "err", environment));
    run.out = read_file(directory / "out");
    run.err = read_file(directory / "err");
  } catch (...) {
    std::filesystem::remove_all(directory);
    throw;
  }
  std::filesystem::remove_all(directory);
  return run;
}

std::filesystem::path current_executable() {
  std::error_code error;
  std::filesystem::path path = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error)
    throw RuntimeFailure("cannot find the perfsim executable (/proc/self/exe): " + error.message());
  return path;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& arg : argv) {
    if (!out.empty())
      out += ' ';
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789-_./=:,+%@") == std::string::npos;
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) {
      if (c == '\'')
        out += "'\\''";
      else
        out += c;
    }
    out += '\'';
  }
  return out;
}

}  // namespace perfsim::sweep
