#pragma once
// Peak GPU memory of one rank from a trace: tensor lifetimes (tensor_lifetimes.hpp) replayed in
// op order through the caching-allocator emulation (caching_allocator.hpp), plus the per-device
// context constant of seed 003 Sec. 3.3 ("Memory footprint beyond cudaMalloc": driver, CUDA
// context and libraries, a constant per device and library set).
#include <optional>
#include <string>
#include <vector>

#include "memory/device_memory.hpp"
#include "memory/memory_category.hpp"
#include "memory/tensor_lifetimes.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::memory {

struct LiveTensor {
  std::int64_t storage_id = -1;
  Bytes bytes = 0;
  MemoryCategory category = MemoryCategory::kOther;
  std::string made_by;  // op name of the first reference
};

// Memory after the allocations of one op (before its frees).
struct MemorySample {
  std::int64_t op_id = -1;
  Bytes live_tensor_bytes = 0;
  Bytes allocated_bytes = 0;
  Bytes reserved_bytes = 0;
};

struct TraceMemoryReport {
  std::string source;
  std::string device;
  std::size_t tensor_count = 0;
  std::size_t reused_storage_ids = 0;  // storage ids that name more than one allocation
  // Replayed peaks. "allocated" counts blocks as the allocator hands them out (512-byte
  // rounding, unsplit remainders); "reserved" counts segments; "live" counts tensor bytes.
  Bytes peak_live_tensor_bytes = 0;
  Bytes peak_allocated_bytes = 0;
  Bytes peak_reserved_bytes = 0;
  std::size_t segments_at_end = 0;
  // Where the allocated peak is reached (the op whose allocations reach it first).
  std::int64_t peak_op_id = -1;
  std::string peak_op_name;
  std::string peak_top_level_op_name;  // the outermost working ancestor, when different
  std::string peak_profiler_step;      // the enclosing ProfilerStep#N annotation, if any
  TracePhase peak_phase = TracePhase::kForward;
  CategoryBytes live_at_peak;               // tensor bytes by category
  std::vector<LiveTensor> largest_at_peak;  // up to 5, largest first
  // The footprint nvidia-smi would show: reserved peak + context.
  Bytes context_bytes = 0;
  Bytes peak_device_bytes = 0;
  MemoryVerdict verdict;
  std::vector<MemorySample> timeline;  // one per Trace::ops entry
};

// Throws InputError when the trace has no GPU tensor (see infer_tensor_lifetimes).
TraceMemoryReport trace_memory_report(const Trace& trace, const DeviceMemory& device_memory,
                                      std::string gpu_device = {});

std::string format_trace_memory_report(const TraceMemoryReport& report);

}  // namespace perfsim::memory
