#include "memory/kineto_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "perfsim/error.hpp"

namespace perfsim::memory {
namespace {

int chosen_device(const std::string& source, const std::vector<trace_io::KinetoMemoryEvent>& events,
                  const std::string& gpu_device) {
  std::map<int, std::size_t> per_device;
  for (const auto& event : events) {
    if (event.device_type == trace_io::kKinetoDeviceTypeCuda)
      ++per_device[event.device_id];
  }
  if (per_device.empty()) {
    throw InputError(source, "[memory]",
                     "the trace records no GPU allocator event (profile with "
                     "profile_memory=True), so it gives no memory figure");
  }
  if (!gpu_device.empty()) {
    const std::string prefix = "cuda:";
    int id = -1;
    if (gpu_device.rfind(prefix, 0) == 0)
      id = std::atoi(gpu_device.c_str() + prefix.size());
    if (!per_device.count(id))
      throw InputError(source, "--gpu-device", "no [memory] event of " + gpu_device);
    return id;
  }
  return std::max_element(per_device.begin(), per_device.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

std::string gib(Bytes bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3f GiB (%lld B)",
                static_cast<double>(bytes) / (1024.0 * 1024 * 1024), static_cast<long long>(bytes));
  return text;
}

}  // namespace

KinetoMemoryReport kineto_memory_report(const std::string& source,
                                        const std::vector<trace_io::KinetoMemoryEvent>& events,
                                        const DeviceMemory& device_memory,
                                        const std::string& gpu_device) {
  KinetoMemoryReport report;
  report.source = source;
  report.device_id = chosen_device(source, events, gpu_device);
  Bytes replayed = 0;
  bool first = true;
  for (const auto& event : events) {
    if (event.device_type != trace_io::kKinetoDeviceTypeCuda || event.device_id != report.device_id)
      continue;
    ++report.events;
    if (first) {
      report.allocated_at_start_bytes = event.total_allocated_bytes - event.bytes;
      replayed = report.allocated_at_start_bytes;
      report.replayed_peak_allocated_bytes = replayed;
      first = false;
    }
    replayed += event.bytes;
    if (replayed != event.total_allocated_bytes) {
      ++report.inconsistent_events;
      replayed = event.total_allocated_bytes;  // resynchronize on the allocator's own total
    }
    report.replayed_peak_allocated_bytes = std::max(report.replayed_peak_allocated_bytes, replayed);
    if (event.total_allocated_bytes > report.peak_allocated_bytes) {
      report.peak_allocated_bytes = event.total_allocated_bytes;
      report.peak_allocated_at_us = event.ts_us;
    }
    report.peak_reserved_bytes = std::max(report.peak_reserved_bytes, event.total_reserved_bytes);
    report.allocated_at_end_bytes = event.total_allocated_bytes;
  }
  report.context_bytes = device_memory.context_bytes;
  report.peak_device_bytes = report.peak_reserved_bytes + report.context_bytes;
  report.verdict = memory_verdict(report.peak_device_bytes, device_memory);
  return report;
}

std::string format_kineto_memory_report(const KinetoMemoryReport& report) {
  std::string out = "memory of " + report.source + " (cuda:" + std::to_string(report.device_id) +
                    ", from the trace's " + std::to_string(report.events) +
                    " [memory] allocator events)\n";
  out += "  peak allocated: " + gib(report.peak_allocated_bytes) + "\n";
  out += "  peak reserved:  " + gib(report.peak_reserved_bytes) + "\n";
  out += "  allocated at first / last event: " + gib(report.allocated_at_start_bytes) + " / " +
         gib(report.allocated_at_end_bytes) + "\n";
  out += "  check: replaying the events' byte deltas reaches " +
         gib(report.replayed_peak_allocated_bytes) +
         (report.replayed_peak_allocated_bytes == report.peak_allocated_bytes
              ? std::string(", the recorded peak")
              : std::string(", NOT the recorded peak")) +
         "; " + std::to_string(report.inconsistent_events) +
         " events disagree with the running total (lost events)\n";
  out += "  device footprint (reserved peak + context " + gib(report.context_bytes) +
         "): " + gib(report.peak_device_bytes) + "\n";
  return out;
}

}  // namespace perfsim::memory
