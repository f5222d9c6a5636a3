#include "collectives/error_table.hpp"

#include <cstdio>

namespace perfsim::collectives {
namespace {

std::string cells(const ErrorSummary& summary) {
  char buffer[64];
  if (summary.count == 0)
    std::snprintf(buffer, sizeof buffer, " %3s %7s %7s %7s", "0", "-", "-", "-");
  else
    std::snprintf(buffer, sizeof buffer, " %3zu %6.2f%% %6.2f%% %6.2f%%", summary.count,
                  100.0 * summary.gmae, 100.0 * summary.mape, 100.0 * summary.stddev);
  return buffer;
}

}  // namespace

std::string format_error_table(const std::vector<ErrorTableRow>& rows) {
  std::size_t width = 4;
  for (const auto& row : rows)
    width = std::max(width, row.name.size());
  std::string out;
  char header[512];
  std::snprintf(header, sizeof header, "%-*s |%-28s |%-28s |%-28s |%-28s\n",
                static_cast<int>(width), "file", "   n    GMAE    MAPE     std",
                " region 1 (latency)", " region 2 (sigmoid)", " region 3 (bandwidth)");
  out += header;
  for (const auto& row : rows) {
    out += row.name + std::string(width - row.name.size(), ' ');
    out += " |" + cells(row.errors.all);
    for (const auto& region : row.errors.by_region)
      out += " |" + cells(region);
    out += "\n";
  }
  return out;
}

}  // namespace perfsim::collectives
