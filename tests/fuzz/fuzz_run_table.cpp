// The measured-runs CSV of `perfsim validate runs` (configs/validation/*.csv).
#include "fuzz_input.hpp"
#include "validation/run_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::validation::parse_run_table(text, perfsim::fuzz::kSource);
  });
}
