#include "memory/device_memory.hpp"

#include <cmath>
#include <cstdio>

#include "devices/device_spec.hpp"

namespace perfsim::memory {

DeviceMemory device_memory_of(const devices::DeviceSpec& spec, double capacity_override_GB,
                              Bytes context_bytes) {
  DeviceMemory device;
  device.name = spec.name;
  const double capacity_bytes =
      capacity_override_GB > 0 ? capacity_override_GB * kBytesPerGB : spec.hbm_capacity_bytes.value;
  if (capacity_bytes > 0)
    device.capacity_bytes = static_cast<Bytes>(std::llround(capacity_bytes));
  device.context_bytes = context_bytes;
  device.architecture = spec.architecture;
  return device;
}

MemoryVerdict memory_verdict(Bytes footprint_bytes, const DeviceMemory& device) {
  MemoryVerdict verdict;
  if (!device.capacity_bytes)
    return verdict;
  verdict.known = true;
  verdict.margin_bytes = *device.capacity_bytes - footprint_bytes;
  verdict.fits = verdict.margin_bytes >= 0;
  return verdict;
}

std::string format_bytes(Bytes bytes) {
  constexpr double kKiB = 1024.0;
  const double magnitude = std::fabs(static_cast<double>(bytes));
  char text[64];
  if (magnitude >= kKiB * kKiB * kKiB)
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / (kKiB * kKiB * kKiB));
  else if (magnitude >= kKiB * kKiB)
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (kKiB * kKiB));
  else if (magnitude >= kKiB)
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / kKiB);
  else
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  return text;
}

std::string format_verdict(const MemoryVerdict& verdict, const DeviceMemory& device) {
  if (!verdict.known)
    return "capacity unknown (no verdict)";
  const std::string capacity = format_bytes(device.capacity_bytes.value_or(0));
  const std::string on =
      (device.name.empty() ? " in " : " on " + device.name + ", ") + capacity + " capacity";
  if (verdict.fits)
    return "fits" + on + ": " + format_bytes(verdict.margin_bytes) + " to spare";
  return "OUT OF MEMORY" + on + ": short by " + format_bytes(-verdict.margin_bytes);
}

}  // namespace perfsim::memory
