#include "scenario/device_argument.hpp"

namespace perfsim::scenario {

devices::DeviceSpec read_device_argument(const std::string& name_or_file) {
  if (name_or_file.ends_with(".json"))
    return devices::load_device_file(name_or_file);
  return devices::find_device(std::string(PERFSIM_SOURCE_DIR) + "/configs/devices", name_or_file);
}

}  // namespace perfsim::scenario
