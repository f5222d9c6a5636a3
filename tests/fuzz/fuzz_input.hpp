#pragma once
// What every fuzz target does with libFuzzer's bytes: hand them to one loader as the text of a
// file named "fuzz-input" and accept an InputError. Any other exception escapes to libFuzzer,
// which reports it as a crash, as it does a sanitizer finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "perfsim/error.hpp"

namespace perfsim::fuzz {

inline constexpr const char* kSource = "fuzz-input";

template <class Loader>
int run_loader(const std::uint8_t* data, std::size_t size, Loader&& loader) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    loader(text);
  } catch (const InputError& error) {
    // The promised message names the file: a rejection that lost it is a bug too.
    if (error.file() != kSource && error.file().rfind(kSource, 0) != 0)
      __builtin_trap();
  }
  return 0;
}

}  // namespace perfsim::fuzz
