#pragma once
// A --device argument: a device file (*.json) or a GPU name looked up in configs/devices of the
// source tree (case-insensitive, aliases included).
#include <string>

#include "devices/device_spec.hpp"

namespace perfsim::scenario {

devices::DeviceSpec read_device_argument(const std::string& name_or_file);

}  // namespace perfsim::scenario
