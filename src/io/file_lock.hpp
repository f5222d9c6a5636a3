#pragma once
// An exclusive advisory lock (flock) held for one read-modify-write of a shared output file,
// so that concurrent runs appending to one results file wait for each other instead of one
// losing its result. The lock lives on a sidecar file "<target>.lock", created on acquire and
// removed on release; the kernel drops it when the holder dies, so a killed holder never
// blocks others. A target that is a device (/dev/null) is not locked.
#include <chrono>
#include <filesystem>

namespace perfsim::io {

class FileLock {
 public:
  // Waits up to `timeout` for the lock on `target`; throws RuntimeFailure naming the lock file
  // when the wait runs out or the lock file cannot be created.
  FileLock(const std::filesystem::path& target, std::chrono::milliseconds timeout);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  const std::filesystem::path& lock_path() const { return lock_path_; }

 private:
  std::filesystem::path lock_path_;
  int fd_ = -1;
};

}  // namespace perfsim::io
