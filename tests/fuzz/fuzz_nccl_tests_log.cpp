// nccl-tests logs (all_reduce_perf and friends, read by `perfsim fit`).
#include "collectives/nccl_tests_log.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::collectives::parse_nccl_tests_log(text, perfsim::fuzz::kSource);
  });
}
