#include "mpi_sim/cli/shipped_config_option.hpp"

#include <string>

#include "perfsim/error.hpp"
#include "scenario/config_path.hpp"

namespace perfsim::cli {

CLI::Validator shipped_config(const char* folder) {
  return CLI::Validator(
      [folder](std::string& value) {
        if (value.empty())
          return std::string();
        try {
          value = scenario::config_path(value, folder);
        } catch (const InputError& error) {
          return std::string(error.what());  // CLI11 reports it as the option's problem
        }
        return std::string();
      },
      std::string("FILE or name in configs/") + folder);
}

}  // namespace perfsim::cli
