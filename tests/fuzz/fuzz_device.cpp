// Device files (configs/devices/*.json).
#include "devices/device_spec.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::devices::parse_device_json(text, perfsim::fuzz::kSource);
  });
}
