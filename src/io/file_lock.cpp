#include "io/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "io/system_error.hpp"
#include "perfsim/error.hpp"

namespace perfsim::io {
namespace {

// The holder removes the lock file before it unlocks, so a lock taken on a file that is no
// longer at the path is worthless: the next holder locks the new file.
bool still_at_path(int fd, const std::filesystem::path& path) {
  struct stat held {
  }, current{};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &current) == 0 &&
         held.st_dev == current.st_dev && held.st_ino == current.st_ino;
}

}  // namespace

FileLock::FileLock(const std::filesystem::path& target, std::chrono::milliseconds timeout)
    : lock_path_(target.string() + ".lock") {
  // /dev/null and other devices are not shared files: nothing to take turns on, and no lock
  // file belongs beside them.
  struct stat existing {};
  if (::stat(target.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode))
    return;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw_system_error(lock_path_, "cannot create the lock file", errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      if (still_at_path(fd, lock_path_)) {
        fd_ = fd;
        return;
      }
      ::close(fd);
      continue;
    }
    const int error = errno;
    ::close(fd);
    if (error != EWOULDBLOCK && error != EINTR)
      throw_system_error(lock_path_, "cannot lock", error);
    if (Clock::now() > deadline) {
      throw RuntimeFailure(
          lock_path_.string() + ": another process has held this lock for more than " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
          " s while writing " + target.string());
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

FileLock::~FileLock() {
  if (fd_ < 0)
    return;
  ::unlink(lock_path_.c_str());
  ::close(fd_);
}

}  // namespace perfsim::io
