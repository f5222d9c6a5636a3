// Kineto (Chrome trace) JSON: events, comm args and the op tree, then the [memory] events that
// `perfsim memory` reads from the same file.
#include "fuzz_input.hpp"
#include "trace_io/kineto_loader.hpp"
#include "trace_io/kineto_memory_events.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    const perfsim::io::InputBytes input{perfsim::fuzz::kSource, text};
    try {
      perfsim::trace_io::load_kineto_trace(input);
    } catch (const perfsim::InputError& error) {
      if (error.file() != perfsim::fuzz::kSource)
        __builtin_trap();  // a rejection must name the file
      // the memory events may still be readable: go on
    }
    perfsim::trace_io::read_kineto_memory_events(input);
  });
}
