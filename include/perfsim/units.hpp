#pragma once
// Units live in names: every duration is *_us (microseconds, double), every size is *_bytes
// (int64), every bandwidth is *_GBps (1 GB/s = 1e9 bytes/s). These aliases exist so that a
// signature says which unit it speaks.
#include <cstdint>

namespace perfsim {

using DurationUs = double;   // microseconds
using TimestampUs = double;  // microseconds since the start of the simulated iteration
using Bytes = std::int64_t;
using BandwidthGBps = double;  // 1e9 bytes per second

inline constexpr double kBytesPerGB = 1e9;
inline constexpr double kUsPerSecond = 1e6;

// bytes moved in duration_us, in GB/s.
inline constexpr BandwidthGBps bandwidth_GBps(Bytes bytes, DurationUs duration_us) {
  return duration_us > 0 ? static_cast<double>(bytes) / kBytesPerGB / (duration_us / kUsPerSecond)
                         : 0.0;
}

// time to move bytes at bandwidth_GBps, in microseconds.
inline constexpr DurationUs transfer_time_us(double bytes, BandwidthGBps bandwidth) {
  return bandwidth > 0 ? bytes / (bandwidth * kBytesPerGB) * kUsPerSecond : 0.0;
}

}  // namespace perfsim
