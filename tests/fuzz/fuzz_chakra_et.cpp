// Chakra protobuf execution traces (.et): framing, protobuf messages, the IOInfo lists and the
// JSON loader behind them.
#include "fuzz_input.hpp"
#include "trace_io/chakra_et.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::load_chakra_et(perfsim::io::InputBytes{perfsim::fuzz::kSource, text});
  });
}
