// Topology files (configs/topologies/*.json).
#include "fuzz_input.hpp"
#include "topology/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::topology::parse_topology(text, perfsim::fuzz::kSource);
  });
}
