// Damaged copies of a real trace (truncated, bytes overwritten) must either load or fail with
// InputError: never another exception, never a crash.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "io/input_file.hpp"
#include "perfsim/error.hpp"
#include "trace_io/execution_trace_loader.hpp"

namespace perfsim {
namespace {

const std::string kDlrmRank0 = std::string(PERFSIM_SHARED_DATA_DIR) +
                               "/traces/param-dlrm-8xV100/dlrm_pytorch_et.tar.gz:"
                               "dlrm_pytorch_et/dlrm_eg_0.json";

// Characters that keep a JSON document plausible, so mutations reach the loader's own checks
// and not only the JSON parser.
constexpr std::string_view kReplacements = "0123456789-[]{},:\"ae ";

enum class Outcome { kLoaded, kInputError };

Outcome load(const io::InputBytes& input) {
  try {
    load_execution_trace(input);
    return Outcome::kLoaded;
  } catch (const InputError&) {
    return Outcome::kInputError;
  }
}

TEST(ExecutionTraceMutation, TruncatedCopiesAreInputErrors) {
  io::InputBytes original = io::read_input(kDlrmRank0);
  std::mt19937_64 random(20241121);
  std::uniform_int_distribution<std::size_t> cut(1, original.bytes.size() - 2);
  for (int trial = 0; trial < 40; ++trial) {
    io::InputBytes damaged{original.source, original.bytes.substr(0, cut(random))};
    EXPECT_EQ(load(damaged), Outcome::kInputError) << "cut at " << damaged.bytes.size();
  }
}

TEST(ExecutionTraceMutation, OverwrittenBytesLoadOrFailCleanly) {
  io::InputBytes original = io::read_input(kDlrmRank0);
  std::mt19937_64 random(7);
  std::uniform_int_distribution<std::size_t> where(0, original.bytes.size() - 1);
  std::uniform_int_distribution<std::size_t> which(0, kReplacements.size() - 1);
  int errors = 0;
  for (int trial = 0; trial < 150; ++trial) {
    io::InputBytes damaged = original;
    for (int flips = 0; flips < 3; ++flips)
      damaged.bytes[where(random)] = kReplacements[which(random)];
    errors += load(damaged) == Outcome::kInputError;  // any other exception fails the test
  }
  EXPECT_GT(errors, 0) << "overwriting bytes at random should break some copies";
}

}  // namespace
}  // namespace perfsim
