#pragma once
// The first screen of `simulate` and `plan`: the answer (iteration time, throughput and MFU,
// where the time goes, memory per stage) in at most kSummaryScreenLines lines, before any
// detail. Detail tables come after, and only on request (detail_tables.hpp).
#include <cstddef>
#include <string>

#include "report/run_report.hpp"

namespace perfsim::report {

inline constexpr std::size_t kSummaryScreenLines = 25;

// At most `max_lines` lines: up to five warnings first, then the answer; the memory stages are
// shortened to the first, worst and last when the pipeline is deep.
std::string format_summary_screen(const RunReport& report,
                                  std::size_t max_lines = kSummaryScreenLines);

// What follows the summary on every run: the models behind the figures, where the results
// went, how to see more, and the simulator's own speed (not a workload figure).
std::string format_run_footer(const RunReport& report);

// Always ms, so scripts find one unit: "16880.36 ms", "3.142 ms", "0.502 ms".
std::string format_duration(double us);

}  // namespace perfsim::report
