#include "mpi_sim/cli/shipped_config_option.hpp"

#include <string>

#include "scenario/config_path.hpp"

namespace perfsim::cli {

CLI::Validator shipped_config(const char* folder) {
  return CLI::Validator(
      [folder](std::string& value) {
        if (!value.empty())
          value = scenario::config_path(value, folder);
        return std::string();
      },
      std::string("FILE or name in configs/") + folder);
}

}  // namespace perfsim::cli
