#pragma once
// What `perfsim trace summary` prints: op, kernel and collective counts of one loaded trace.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "perfsim/trace.hpp"

namespace perfsim::trace_io {

struct KernelTally {
  std::int64_t count = 0;
  DurationUs measured_us = 0;  // summed where measured
};

struct CollectiveLine {
  std::int64_t op_id = 0;
  std::string op_name;
  CommInfo comm;
};

struct TraceSummary {
  std::string source;
  std::string format;
  int rank = 0;
  int world_size = 1;
  std::string device_name;
  std::int64_t ops = 0;
  std::int64_t annotations = 0;
  std::int64_t top_level_ops = 0;
  std::int64_t threads = 0;
  std::int64_t runtime_calls = 0;
  std::map<std::string, KernelTally> kernels_by_category;  // kernel_category_name
  std::map<StreamId, KernelTally> kernels_by_stream;
  KernelTally unattributed_kernels;
  std::vector<CollectiveLine> collectives;  // in execution order
  std::optional<MeasuredStep> measured_step;
};

TraceSummary summarize_trace(const Trace& trace);
std::string format_trace_summary(const TraceSummary& summary);

}  // namespace perfsim::trace_io
