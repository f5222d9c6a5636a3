// Outputs written whole or not at all (src/io/atomic_file), the results-file lock
// (src/io/file_lock) and HDF5 files built in memory (h5::OutputFile).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hdf5/column_table.hpp"
#include "io/atomic_file.hpp"
#include "io/file_lock.hpp"
#include "perfsim/error.hpp"

namespace perfsim::io {
namespace {

namespace fs = std::filesystem;

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("perfsim_atomic_" + std::to_string(getpid()));
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::size_t entries() {
    return static_cast<std::size_t>(
        std::distance(fs::directory_iterator(directory_), fs::directory_iterator()));
  }

  fs::path directory_;
};

TEST_F(AtomicFile, ReplacesTheTargetAndLeavesNoTemporary) {
  const fs::path target = directory_ / "out.json";
  write_file_atomically(target, std::string("first"));
  write_file_atomically(target, [](std::ostream& out) { out << "second"; });
  EXPECT_EQ(read(target), "second");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFile, AFailedWriteKeepsThePreviousFile) {
  const fs::path target = directory_ / "out.json";
  write_file_atomically(target, std::string("previous"));
  EXPECT_THROW(
      write_file_atomically(target, [](std::ostream&) { throw RuntimeFailure("mid-write"); }),
      RuntimeFailure);
  EXPECT_EQ(read(target), "previous");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFile, DiskFullIsAnErrorNamingTheFile) {
  if (!fs::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full";
  try {
    write_file_atomically("/dev/full", std::string(1 << 16, 'x'));
    FAIL() << "writing /dev/full succeeded";
  } catch (const RuntimeFailure& error) {
    EXPECT_NE(std::string(error.what()).find("/dev/full: cannot write: No space left on device"),
              std::string::npos)
        << error.what();
  }
}

TEST_F(AtomicFile, MissingDirectoryFailsTheWritabilityCheck) {
  EXPECT_THROW(check_writable(directory_ / "missing" / "out.h5"), RuntimeFailure);
  EXPECT_THROW(check_writable(directory_), RuntimeFailure);  // a directory is no output file
  check_writable(directory_ / "out.h5");
  EXPECT_EQ(entries(), 0u);  // the probe is gone
}

TEST_F(AtomicFile, LockWaitsForItsHolderAndTimesOut) {
  const fs::path target = directory_ / "results.h5";
  {
    FileLock held(target, std::chrono::seconds(1));
    EXPECT_TRUE(fs::exists(held.lock_path()));
    // flock locks belong to open files: a child process contends like another perfsim.
    const pid_t child = fork();
    if (child == 0) {
      try {
        FileLock second(target, std::chrono::milliseconds(200));
        _exit(1);  // got a lock that is held
      } catch (const RuntimeFailure&) {
        _exit(0);
      }
    }
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "second lock did not time out";
  }
  EXPECT_FALSE(fs::exists(directory_ / "results.h5.lock"));  // removed on release
  FileLock again(target, std::chrono::milliseconds(200));    // and free again
}

TEST_F(AtomicFile, DevicesAreWrittenInPlaceAndNotLocked) {
  {
    FileLock lock("/dev/null", std::chrono::milliseconds(100));
    EXPECT_FALSE(fs::exists("/dev/null.lock"));
  }
  write_file_atomically("/dev/null", std::string("discarded"));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));  // not renamed over
}

TEST_F(AtomicFile, HdfOutputFileAddsGroupsAndCommitsWhole) {
  const fs::path target = directory_ / "tables.h5";
  h5::ColumnTable table;
  table.add("x", std::vector<double>{1, 2, 3}, "us");
  h5::write_table(target, "/a", table);
  {
    h5::OutputFile output(target, /*truncate_file=*/false);
    output.write_table("/b", table);
    // Not committed: the file on disk is still the one with /a alone.
  }
  EXPECT_EQ(h5::list_groups(target, "/"), (std::vector<std::string>{"a"}));
  h5::OutputFile output(target, /*truncate_file=*/false);
  output.write_table("/b/c", table);
  output.commit();
  EXPECT_EQ(h5::list_groups(target, "/"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(h5::read_table(target, "/b/c").doubles("x"), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(entries(), 1u);
}

}  // namespace
}  // namespace perfsim::io
