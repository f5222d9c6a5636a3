// End-to-end calibrations (configs/assets/llm_calibration.json).
#include "fuzz_input.hpp"
#include "validation/end_to_end_calibration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::validation::parse_calibration(text, perfsim::fuzz::kSource);
  });
}
