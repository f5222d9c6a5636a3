#pragma once
// The public nccl-tests sweeps under tests/data/nccl-tests-public (its README says where each
// came from), read by the collective golden tests. A missing fixture throws, so a test fails
// rather than judging fewer sweeps than it claims.
#include <filesystem>
#include <stdexcept>

#include "collectives/nccl_tests_log.hpp"

namespace perfsim::test_support {

// `relative` is the sweep's path under tests/data/nccl-tests-public.
inline collectives::CollectiveSweep public_nccl_sweep(const std::filesystem::path& relative) {
  const std::filesystem::path path =
      std::filesystem::path(PERFSIM_TEST_DATA_DIR) / "nccl-tests-public" / relative;
  if (!std::filesystem::exists(path))
    throw std::runtime_error("missing fixture " + path.string());
  return collectives::read_nccl_tests_log(path.string()).sweep;
}

}  // namespace perfsim::test_support
