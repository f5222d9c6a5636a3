// Sweep files (configs/sweeps/*.json): parameters, cases and their expansion into tasks.
#include "fuzz_input.hpp"
#include "sweep/sweep_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::sweep::parse_sweep(text, perfsim::fuzz::kSource);
  });
}
