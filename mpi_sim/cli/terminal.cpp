#include "mpi_sim/cli/terminal.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace perfsim::cli {
namespace {

bool is_terminal_device(const std::string& path) {
  return path.rfind("/dev/pts/", 0) == 0 || path.rfind("/dev/tty", 0) == 0;
}

// The parent of `pid` from /proc (0 when unknown).
long parent_of(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line))
    return 0;
  // "pid (command) state ppid ...": the command may hold spaces and parentheses.
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos || close + 4 > line.size())
    return 0;
  return std::strtol(line.c_str() + close + 4, nullptr, 10);
}

}  // namespace

bool stderr_reaches_terminal() {
  if (isatty(STDERR_FILENO))
    return true;
  if (std::getenv("OMPI_COMM_WORLD_RANK") == nullptr)
    return false;
  // mpirun is the parent on its own node, or the grandparent through a local daemon (prted).
  long pid = static_cast<long>(getppid());
  for (int level = 0; level < 3 && pid > 1; ++level, pid = parent_of(pid)) {
    std::error_code error;
    const auto target =
        std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/fd/2", error);
    if (!error && is_terminal_device(target.string()))
      return true;
  }
  return false;
}

}  // namespace perfsim::cli
