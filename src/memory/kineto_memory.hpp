#pragma once
// Peak GPU memory of one rank from a Kineto trace's own allocator record ([memory] events):
// what the caching allocator had allocated and reserved over time. The peak is checked
// against the allocations themselves: replaying every event's byte delta from the first
// event's starting point must reach the same allocated peak; events the profiler lost show
// up as a difference (reported, not hidden).
#include <optional>
#include <string>
#include <vector>

#include "memory/device_memory.hpp"
#include "trace_io/kineto_memory_events.hpp"

namespace perfsim::memory {

struct KinetoMemoryReport {
  std::string source;
  int device_id = -1;
  std::size_t events = 0;              // [memory] events of that GPU
  Bytes allocated_at_start_bytes = 0;  // before the first event (allocated before profiling)
  Bytes allocated_at_end_bytes = 0;
  Bytes peak_allocated_bytes = 0;  // the largest "Total Allocated" recorded
  TimestampUs peak_allocated_at_us = 0;
  Bytes peak_reserved_bytes = 0;            // the largest "Total Reserved" recorded
  Bytes replayed_peak_allocated_bytes = 0;  // start + running sum of the events' Bytes
  std::size_t inconsistent_events = 0;      // whose total differs from the replayed one
  Bytes context_bytes = 0;
  Bytes peak_device_bytes = 0;  // reserved peak + context: what nvidia-smi would show
  MemoryVerdict verdict;
};

// `gpu_device`: "cuda:N" or "" for the GPU with the most events. Throws InputError naming
// the source when the trace has no [memory] event of a GPU (profile_memory was off).
KinetoMemoryReport kineto_memory_report(const std::string& source,
                                        const std::vector<trace_io::KinetoMemoryEvent>& events,
                                        const DeviceMemory& device_memory,
                                        const std::string& gpu_device = {});

std::string format_kineto_memory_report(const KinetoMemoryReport& report);

}  // namespace perfsim::memory
