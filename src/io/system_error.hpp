#pragma once

#include <cstring>
#include <filesystem>
#include <string>

#include "perfsim/error.hpp"

namespace perfsim::io {

// A failed system call on `file`, with the C library's text for `error` (an errno value).
[[noreturn]] inline void throw_system_error(const std::filesystem::path& file,
                                            const std::string& what, int error) {
  throw RuntimeFailure(file.string() + ": " + what + ": " + std::strerror(error));
}

}  // namespace perfsim::io
