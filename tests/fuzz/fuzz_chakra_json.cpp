// Chakra JSON execution graphs.
#include "fuzz_input.hpp"
#include "trace_io/chakra_json_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::load_chakra_json(perfsim::io::InputBytes{perfsim::fuzz::kSource, text});
  });
}
