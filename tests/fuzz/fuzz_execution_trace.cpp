// PyTorch execution traces (ET 1.0.x and 1.1-chakra JSON).
#include "fuzz_input.hpp"
#include "trace_io/execution_trace_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::load_execution_trace(perfsim::io::InputBytes{perfsim::fuzz::kSource, text});
  });
}
