#pragma once
// The allocator's own record in a Kineto trace: "[memory]" instant events, written by the
// PyTorch profiler with profile_memory=True, one per allocation and free, each carrying the
// allocator's totals after it ("Total Allocated", "Total Reserved").
#include <cstddef>
#include <vector>

#include "io/input_file.hpp"
#include "perfsim/units.hpp"

namespace perfsim::trace_io {

inline constexpr int kKinetoDeviceTypeCuda = 1;  // c10::DeviceType::CUDA

struct KinetoMemoryEvent {
  std::size_t index = 0;  // position in traceEvents
  TimestampUs ts_us = 0;
  int device_type = 0;  // 0 CPU, 1 CUDA
  int device_id = -1;
  Bytes bytes = 0;  // positive: allocated; negative: freed
  Bytes total_allocated_bytes = 0;
  Bytes total_reserved_bytes = 0;
};

// Every [memory] event, in file order. Throws InputError naming the event and field when one
// lacks a number the report needs (Bytes, Total Allocated, Total Reserved).
std::vector<KinetoMemoryEvent> read_kineto_memory_events(const io::InputBytes& input);

}  // namespace perfsim::trace_io
