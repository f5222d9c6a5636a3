// Issue 20: an nccl-tests row with an infinite or absurd time or bandwidth fitted a curve to a
// number no run produced; such rows are InputErrors naming the file and the line.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "collectives/nccl_tests_log.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

std::string shared_log(const std::string& name) {
  std::ifstream in(std::string(PERFSIM_SHARED_DATA_DIR) + "/nccl-tests/" + name);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << name;
  return text.str();
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

void expect_rejected(const std::string& text, const std::string& location) {
  try {
    parse_nccl_tests_log(text, "mutant.txt");
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "mutant.txt");
    EXPECT_EQ(error.location(), location) << error.what();
  }
}

const std::string kRow = "           8             2   float     sum    48.46";

TEST(NcclLogNumbers, TheUnmutatedLogsParse) {
  EXPECT_FALSE(parse_nccl_tests_log(shared_log("v100-dgx1-hcm-1node-allreduce.txt"), "v")
                   .sweep.samples.empty());
  EXPECT_FALSE(parse_nccl_tests_log(shared_log("azure-nda100v4-1node-allreduce-busbw.txt"), "a")
                   .sweep.samples.empty());
}

TEST(NcclLogNumbers, InfiniteOrHugeTimeIsAnError) {
  const std::string log = shared_log("v100-dgx1-hcm-1node-allreduce.txt");
  expect_rejected(replaced(log, kRow, "           8             2   float     sum    inf"),
                  "line 27");
  expect_rejected(replaced(log, kRow, "           8             2   float     sum    1e300"),
                  "line 27");
}

TEST(NcclLogNumbers, SizeBeyondAPebibyteIsAnError) {
  const std::string log = shared_log("v100-dgx1-hcm-1node-allreduce.txt");
  expect_rejected(
      replaced(log, kRow, "  4611686018427387904             2   float     sum    48.46"),
      "line 27");
}

TEST(NcclLogNumbers, InfiniteBusBandwidthIsAnError) {
  const std::string log = shared_log("azure-nda100v4-1node-allreduce-busbw.txt");
  expect_rejected(replaced(log, "1K 1024 0.04", "1K 1024 inf"), "line 12");
}

}  // namespace
}  // namespace perfsim::collectives
