#include "memory/memory_timeline_table.hpp"

namespace perfsim::memory {

h5::ColumnTable memory_timeline_table(const TraceMemoryReport& report) {
  std::vector<std::int64_t> op_ids;
  std::vector<std::int64_t> live;
  std::vector<std::int64_t> allocated;
  std::vector<std::int64_t> reserved;
  for (const MemorySample& sample : report.timeline) {
    op_ids.push_back(sample.op_id);
    live.push_back(sample.live_tensor_bytes);
    allocated.push_back(sample.allocated_bytes);
    reserved.push_back(sample.reserved_bytes);
  }
  h5::ColumnTable table;
  table.add("op_id", std::move(op_ids));
  table.add("live_tensor_bytes", std::move(live), "bytes");
  table.add("allocated_bytes", std::move(allocated), "bytes");
  table.add("reserved_bytes", std::move(reserved), "bytes");
  table.attributes["source"] = report.source;
  table.attributes["device"] = report.device;
  table.attributes["context_bytes"] = std::to_string(report.context_bytes);
  table.attributes["meaning"] =
      "memory after the allocations of each op, before its frees (perfsim memory)";
  return table;
}

}  // namespace perfsim::memory
