#include "memory/trace_memory.hpp"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include "memory/caching_allocator.hpp"

namespace perfsim::memory {
namespace {

constexpr std::size_t kLargestListed = 5;

struct Enclosing {
  std::string top_level_op;   // outermost working ancestor
  std::string profiler_step;  // "ProfilerStep#5": the last step begun before the op
};

Enclosing enclosing(const Trace& trace, std::size_t position) {
  Enclosing result;
  const Op* op = &trace.ops[position];
  for (std::size_t depth = 0; op != nullptr && depth < trace.ops.size(); ++depth) {
    if (!op->is_annotation)
      result.top_level_op = op->name;
    if (op->parent_id == op->id)
      break;
    op = trace.find(op->parent_id);
  }
  // Backward ops run on the autograd thread, outside the step annotation of the main thread:
  // the step is the last one that began before the op.
  for (std::size_t at = 0; at <= position; ++at) {
    if (trace.ops[at].name.starts_with("ProfilerStep#"))
      result.profiler_step = trace.ops[at].name;
  }
  return result;
}

}  // namespace

TraceMemoryReport trace_memory_report(const Trace& trace, const DeviceMemory& device_memory,
                                      std::string gpu_device) {
  const TraceLifetimes lifetimes = infer_tensor_lifetimes(trace, std::move(gpu_device));
  TraceMemoryReport report;
  report.source = trace.source;
  report.device = lifetimes.device;
  report.tensor_count = lifetimes.tensors.size();
  std::unordered_map<std::int64_t, int> allocations_per_storage;
  for (const TensorLifetime& tensor : lifetimes.tensors) {
    if (++allocations_per_storage[tensor.storage_id] == 2)
      ++report.reused_storage_ids;
  }

  const std::size_t op_count = trace.ops.size();
  std::vector<std::vector<std::size_t>> starting(op_count);
  std::vector<std::vector<std::size_t>> ending(op_count);
  for (std::size_t i = 0; i < lifetimes.tensors.size(); ++i) {
    starting[lifetimes.tensors[i].first_position].push_back(i);
    ending[lifetimes.tensors[i].last_position].push_back(i);
  }

  // The reservation is allowed to grow without bound: the verdict, not the replay, decides
  // whether it fits (a capacity here would only change when cached segments are released).
  CachingAllocatorEmulator allocator;
  std::vector<CachingAllocatorEmulator::BlockId> blocks(lifetimes.tensors.size(), 0);
  Bytes live_bytes = 0;
  Bytes peak_allocated = -1;
  std::size_t peak_position = 0;
  for (std::size_t position = 0; position < op_count; ++position) {
    for (std::size_t i : starting[position]) {
      // Without a capacity the emulator cannot fail.
      blocks[i] = allocator.allocate(lifetimes.tensors[i].bytes).value();
      live_bytes += lifetimes.tensors[i].bytes;
    }
    report.peak_live_tensor_bytes = std::max(report.peak_live_tensor_bytes, live_bytes);
    report.timeline.push_back({trace.ops[position].id, live_bytes, allocator.allocated_bytes(),
                               allocator.reserved_bytes()});
    if (allocator.allocated_bytes() > peak_allocated) {
      peak_allocated = allocator.allocated_bytes();
      peak_position = position;
    }
    for (std::size_t i : ending[position]) {
      allocator.free(blocks[i]);
      live_bytes -= lifetimes.tensors[i].bytes;
    }
  }
  report.peak_allocated_bytes = allocator.peak_allocated_bytes();
  report.peak_reserved_bytes = allocator.peak_reserved_bytes();
  report.segments_at_end = allocator.segment_count();

  if (op_count > 0) {
    const Op& op = trace.ops[peak_position];
    report.peak_op_id = op.id;
    report.peak_op_name = op.name;
    const Enclosing around = enclosing(trace, peak_position);
    report.peak_top_level_op_name = around.top_level_op;
    report.peak_profiler_step = around.profiler_step;
    report.peak_phase = lifetimes.phase_by_position[peak_position];
  }
  std::vector<LiveTensor> live;
  for (const TensorLifetime& tensor : lifetimes.tensors) {
    if (tensor.first_position > peak_position || tensor.last_position < peak_position)
      continue;
    report.live_at_peak[tensor.category] += tensor.bytes;
    live.push_back({tensor.storage_id, tensor.bytes, tensor.category,
                    trace.ops[tensor.first_reference_position].name});
  }
  std::stable_sort(live.begin(), live.end(),
                   [](const LiveTensor& a, const LiveTensor& b) { return a.bytes > b.bytes; });
  live.resize(std::min(live.size(), kLargestListed));
  report.largest_at_peak = std::move(live);

  report.context_bytes = device_memory.context_bytes;
  report.peak_device_bytes = report.peak_reserved_bytes + report.context_bytes;
  report.verdict = memory_verdict(report.peak_device_bytes, device_memory);
  return report;
}

std::string format_trace_memory_report(const TraceMemoryReport& report) {
  std::ostringstream out;
  out << "memory of " << report.source << " on " << report.device << " (" << report.tensor_count
      << " tensor lifetimes; " << report.reused_storage_ids
      << " storage ids reused for later allocations)\n";
  out << "  peak live tensors   " << format_bytes(report.peak_live_tensor_bytes) << " ("
      << report.peak_live_tensor_bytes << " B)\n";
  out << "  peak allocated      " << format_bytes(report.peak_allocated_bytes) << " ("
      << report.peak_allocated_bytes << " B)\n";
  out << "  peak reserved       " << format_bytes(report.peak_reserved_bytes) << " ("
      << report.peak_reserved_bytes << " B, " << report.segments_at_end
      << " segments at the end)\n";
  out << "  context constant    " << format_bytes(report.context_bytes) << "\n";
  out << "  device footprint    " << format_bytes(report.peak_device_bytes)
      << " (reserved + context)\n";
  out << "  peak at op " << report.peak_op_id << " " << report.peak_op_name;
  if (!report.peak_top_level_op_name.empty() &&
      report.peak_top_level_op_name != report.peak_op_name)
    out << " (inside " << report.peak_top_level_op_name << ")";
  out << ", " << trace_phase_name(report.peak_phase) << " phase";
  if (!report.peak_profiler_step.empty())
    out << ", " << report.peak_profiler_step;
  out << "\n";
  out << "  live at the peak, by category:\n";
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) {
    const auto category = static_cast<MemoryCategory>(i);
    if (report.live_at_peak[category] == 0)
      continue;
    out << "    " << memory_category_name(category) << ": "
        << format_bytes(report.live_at_peak[category]) << "\n";
  }
  out << "  largest live tensors at the peak:\n";
  for (const LiveTensor& tensor : report.largest_at_peak) {
    out << "    storage " << tensor.storage_id << ": " << format_bytes(tensor.bytes) << ", "
        << memory_category_name(tensor.category) << ", first seen at " << tensor.made_by << "\n";
  }
  return out.str();
}

}  // namespace perfsim::memory
