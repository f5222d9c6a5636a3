#include "scenario/config_path.hpp"

#include <filesystem>

namespace perfsim::scenario {

std::string config_path(const std::string& name_or_file, const char* folder) {
  if (name_or_file.ends_with(".json") || std::filesystem::exists(name_or_file))
    return name_or_file;
  return std::string(PERFSIM_SOURCE_DIR) + "/configs/" + folder + "/" + name_or_file + ".json";
}

}  // namespace perfsim::scenario
