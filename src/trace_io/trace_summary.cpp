#include "trace_io/trace_summary.hpp"

#include <iomanip>
#include <set>
#include <sstream>

namespace perfsim::trace_io {
namespace {

void tally(KernelTally& into, const Kernel& kernel) {
  ++into.count;
  into.measured_us += kernel.measured_duration_us.value_or(0.0);
}

std::string describe(const KernelTally& tally) {
  std::ostringstream out;
  out << tally.count << " kernels, " << std::fixed << std::setprecision(1) << tally.measured_us
      << " us measured";
  return out.str();
}

}  // namespace

TraceSummary summarize_trace(const Trace& trace) {
  TraceSummary summary;
  summary.source = trace.source;
  summary.format = trace.format;
  summary.rank = trace.rank;
  summary.world_size = trace.world_size;
  summary.device_name = trace.device_name;
  summary.measured_step = trace.measured_step;
  summary.ops = static_cast<std::int64_t>(trace.ops.size());
  summary.top_level_ops = static_cast<std::int64_t>(trace.top_level_positions().size());
  std::set<std::int64_t> threads;
  for (const Op& op : trace.ops) {
    threads.insert(op.thread_id);
    summary.annotations += op.is_annotation;
    summary.runtime_calls += static_cast<std::int64_t>(op.runtime_calls.size());
    for (const Kernel& kernel : op.kernels) {
      tally(summary.kernels_by_category[std::string(kernel_category_name(kernel.category))],
            kernel);
      tally(summary.kernels_by_stream[kernel.stream], kernel);
    }
    if (op.comm)
      summary.collectives.push_back({op.id, op.name, *op.comm});
  }
  summary.threads = static_cast<std::int64_t>(threads.size());
  for (const Kernel& kernel : trace.unattributed_kernels)
    tally(summary.unattributed_kernels, kernel);
  return summary;
}

std::string format_trace_summary(const TraceSummary& summary) {
  std::ostringstream out;
  out << "trace:        " << summary.source << "\n";
  out << "format:       " << summary.format << "\n";
  out << "rank:         " << summary.rank << " of " << summary.world_size << "\n";
  if (!summary.device_name.empty())
    out << "device:       " << summary.device_name << "\n";
  out << "ops:          " << summary.ops << " (" << summary.annotations << " annotations, "
      << summary.top_level_ops << " top-level ops, " << summary.threads << " threads)\n";
  if (summary.runtime_calls > 0)
    out << "runtime calls: " << summary.runtime_calls << "\n";
  if (summary.measured_step) {
    out << "measured step: " << summary.measured_step->name << ", " << std::fixed
        << std::setprecision(0) << summary.measured_step->duration_us << " us (start "
        << summary.measured_step->start_us << " us)\n";
  } else {
    out << "measured step: none recorded\n";
  }
  out << "kernels by category:\n";
  for (const auto& [category, tally] : summary.kernels_by_category)
    out << "  " << std::left << std::setw(18) << category << describe(tally) << "\n";
  out << "kernels by stream:\n";
  for (const auto& [stream, tally] : summary.kernels_by_stream)
    out << "  stream " << std::left << std::setw(11) << stream << describe(tally) << "\n";
  if (summary.unattributed_kernels.count > 0) {
    out << "  launched before the trace began (no op): " << describe(summary.unattributed_kernels)
        << "\n";
  }
  out << "collectives:  " << summary.collectives.size() << "\n";
  for (const CollectiveLine& line : summary.collectives) {
    out << "  op " << line.op_id << " " << line.op_name << ": " << collective_name(line.comm.kind)
        << " " << dtype_name(line.comm.dtype) << ", " << line.comm.bytes_in << " bytes in, "
        << line.comm.bytes_out << " bytes out, group \"" << line.comm.process_group << "\" of "
        << line.comm.group_size << "\n";
  }
  return out.str();
}

}  // namespace perfsim::trace_io
