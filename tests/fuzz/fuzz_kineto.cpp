// Kineto (Chrome trace) JSON: events, comm args, memory events and the op tree.
#include "fuzz_input.hpp"
#include "trace_io/kineto_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::trace_io::load_kineto_trace(perfsim::io::InputBytes{perfsim::fuzz::kSource, text});
  });
}
