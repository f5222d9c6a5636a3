// Host-overhead assets (JSON from `perfsim overheads extract`).
#include "fuzz_input.hpp"
#include "overheads/overhead_asset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::overheads::host_overheads_from_json(text, perfsim::fuzz::kSource);
  });
}
