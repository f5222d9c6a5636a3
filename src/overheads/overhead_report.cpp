#include "overheads/overhead_report.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <utility>
#include <vector>

namespace perfsim::overheads {
namespace {

void row(std::ostringstream& out, const std::string& name, const OverheadStats& stats) {
  out << "  " << std::left << std::setw(56)
      << (name.size() > 55 ? name.substr(0, 52) + "..." : name) << std::right << std::fixed
      << std::setprecision(2) << std::setw(10) << stats.mean_us << std::setw(10) << stats.stddev_us
      << std::setw(8) << stats.count << "\n";
}

void header(std::ostringstream& out, const std::string& title) {
  out << title << "\n  " << std::left << std::setw(56) << "name" << std::right << std::setw(10)
      << "mean_us" << std::setw(10) << "std_us" << std::setw(8) << "count"
      << "\n";
}

void top_ops(std::ostringstream& out, const HostOverheads& overheads, const char* label,
             OverheadStats OpOverheads::*type, int top) {
  std::vector<std::pair<std::string, OverheadStats>> ranked;
  for (const auto& [name, op] : overheads.per_op) {
    if ((op.*type).count > 0)
      ranked.emplace_back(name, op.*type);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  if (ranked.size() > static_cast<std::size_t>(top))
    ranked.resize(static_cast<std::size_t>(top));
  header(out, std::string(label) + ": top " + std::to_string(ranked.size()) + " ops by samples");
  for (const auto& [name, stats] : ranked)
    row(out, name, stats);
}

}  // namespace

std::string format_overheads_table(const HostOverheads& overheads, int top) {
  std::ostringstream out;
  out << "host overheads from " << overheads.source_traces << " trace(s); profiler overhead "
      << overheads.launch.profiler_cpu_overhead_us << " us per CPU event removed; "
      << overheads.per_op.size() << " op names\n";
  header(out, "pooled over all ops (fallback for unseen ops)");
  row(out, "T1 between top-level ops", overheads.all_ops.t1);
  row(out, "T2 op start to first launch", overheads.all_ops.t2);
  row(out, "T3 last launch to op end", overheads.all_ops.t3);
  row(out, "T4 runtime launch call", overheads.t4_all);
  row(out, "T5 between launches / op without launch", overheads.all_ops.t5);
  top_ops(out, overheads, "T1", &OpOverheads::t1, top);
  top_ops(out, overheads, "T2", &OpOverheads::t2, top);
  top_ops(out, overheads, "T3", &OpOverheads::t3, top);
  top_ops(out, overheads, "T5", &OpOverheads::t5, top);
  header(out, "T4 per runtime API");
  for (const auto& [api, stats] : overheads.t4_per_runtime)
    row(out, api, stats);
  return out.str();
}

}  // namespace perfsim::overheads
