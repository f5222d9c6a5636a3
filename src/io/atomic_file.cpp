#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "io/system_error.hpp"
#include "perfsim/error.hpp"

namespace perfsim::io {
namespace {

namespace fs = std::filesystem;

// A device, FIFO or socket: written in place (renaming over /dev/null would replace it).
bool is_special_file(const fs::path& target) {
  struct stat info {};
  return ::stat(target.c_str(), &info) == 0 && !S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode);
}

fs::path directory_of(const fs::path& target) {
  const fs::path parent = target.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

void write_all(int fd, std::string_view bytes, const fs::path& target) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR)
        continue;
      throw_system_error(target, "cannot write", errno);
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
}

void write_in_place(const fs::path& target, std::string_view bytes) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0)
    throw_system_error(target, "cannot open for writing", errno);
  try {
    write_all(fd, bytes, target);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0)
    throw_system_error(target, "cannot write", errno);
}

// Hands the stream's bytes to a file descriptor 1 MiB at a time, so a large output (a
// 1,024-rank timeline) never sits whole in memory. write_all throws on a failed write; the
// stream (badbit exceptions on) passes that exception on to the writer's caller.
class DescriptorBuffer : public std::streambuf {
 public:
  DescriptorBuffer(int fd, const fs::path& target) : fd_(fd), target_(target), buffer_(1 << 20) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  void drain() {
    write_all(fd_, std::string_view(pbase(), static_cast<std::size_t>(pptr() - pbase())), target_);
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }

 protected:
  int_type overflow(int_type c) override {
    drain();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override {
    drain();
    return 0;
  }

 private:
  int fd_;
  const fs::path& target_;
  std::vector<char> buffer_;
};

void stream_to_descriptor(int fd, const fs::path& target,
                          const std::function<void(std::ostream&)>& write) {
  DescriptorBuffer buffer(fd, target);
  std::ostream out(&buffer);
  out.exceptions(std::ios::badbit);
  write(out);
  buffer.drain();
}

// A new file beside the target (same directory, so the rename is atomic), removed again unless
// committed. Hidden, so a listing during the write shows only finished files.
class TemporaryFile {
 public:
  explicit TemporaryFile(const fs::path& target) : target_(target) {
    if (fs::is_directory(target))
      throw RuntimeFailure(target.string() + ": is a directory");
    std::string pattern =
        (directory_of(target) / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
    fd_ = ::mkstemp(pattern.data());
    if (fd_ < 0)
      throw_system_error(target, "cannot create a file in " + directory_of(target).string(), errno);
    path_ = pattern;
  }
  ~TemporaryFile() {
    if (fd_ >= 0)
      ::close(fd_);
    if (!committed_)
      ::unlink(path_.c_str());
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  int fd() const { return fd_; }

  // On disk first (a crash after the rename must not leave an empty file), then renamed.
  void commit() {
    struct stat existing {};
    const mode_t mode = ::stat(target_.c_str(), &existing) == 0 ? existing.st_mode & 07777 : 0644;
    if (::fchmod(fd_, mode) != 0)
      throw_system_error(target_, "cannot set permissions", errno);
    if (::fsync(fd_) != 0)
      throw_system_error(target_, "cannot write", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0)
      throw_system_error(target_, "cannot write", errno);
    if (::rename(path_.c_str(), target_.c_str()) != 0)
      throw_system_error(target_, "cannot replace", errno);
    committed_ = true;
  }

 private:
  fs::path target_;
  fs::path path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void write_file_atomically(const fs::path& target, std::string_view bytes) {
  if (is_special_file(target)) {
    write_in_place(target, bytes);
    return;
  }
  TemporaryFile temporary(target);
  write_all(temporary.fd(), bytes, target);
  temporary.commit();
}

void write_file_atomically(const fs::path& target,
                           const std::function<void(std::ostream&)>& write) {
  if (is_special_file(target)) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0)
      throw_system_error(target, "cannot open for writing", errno);
    try {
      stream_to_descriptor(fd, target, write);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0)
      throw_system_error(target, "cannot write", errno);
    return;
  }
  TemporaryFile temporary(target);
  stream_to_descriptor(temporary.fd(), target, write);
  temporary.commit();
}

void check_writable(const fs::path& target) {
  if (is_special_file(target)) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      throw_system_error(target, "cannot open for writing", errno);
    ::close(fd);
    return;
  }
  TemporaryFile probe(target);  // removed again: it proves the directory takes a new file
}

}  // namespace perfsim::io
