// Built without protobuf (CMake found no libprotobuf-dev / protobuf-compiler): Chakra .et
// traces can be neither read nor written, and every entry point says why.
#include "perfsim/error.hpp"
#include "trace_io/chakra_et.hpp"

namespace perfsim {
namespace {

[[noreturn]] void unavailable(const std::string& what) {
  throw RuntimeFailure(what +
                       ": perfsim was built without protobuf, so Chakra .et traces are "
                       "unavailable (install libprotobuf-dev and protobuf-compiler, then "
                       "re-run cmake)");
}

}  // namespace

bool chakra_et_available() {
  return false;
}

Trace load_chakra_et(const io::InputBytes& input, std::optional<int>) {
  unavailable(input.source);
}

void write_chakra_et(const Trace&, std::ostream&) {
  unavailable("Chakra writer");
}

void write_chakra_et_file(const Trace&, const std::string& path) {
  unavailable(path);
}

}  // namespace perfsim
