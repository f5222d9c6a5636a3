// DLRM configs (configs/dlrm/*.json).
#include "fuzz_input.hpp"
#include "generators/dlrm/dlrm_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::generators::dlrm::parse_dlrm_config(text, perfsim::fuzz::kSource);
  });
}
