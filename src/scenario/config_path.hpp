#pragma once
// A config argument on the command line or in a run table: a file path, or a name in the
// source tree's configs/<folder>/<name>.json (`korthikanti-175b`, `dgx-a100-8node`).
#include <string>

namespace perfsim::scenario {

std::string config_path(const std::string& name_or_file, const char* folder);

}  // namespace perfsim::scenario
