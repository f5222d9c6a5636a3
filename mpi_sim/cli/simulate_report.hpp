#pragma once
// What `perfsim simulate` prints on process 0 once every rank has finished: the summary screen
// first, then the workload's sections (the Kineto validation table), the details asked for
// with --detail, and the footer; or the JSON / CSV form (--format).
#include <ostream>
#include <span>

#include "perfsim/rank_result.hpp"
#include "report/run_report.hpp"
#include "scenario/simulation_inputs.hpp"

namespace perfsim::cli {

// --detail names: ranks, groups, streams, memory, workload, or all.
inline constexpr const char* kDetailNames[] = {"ranks",  "groups",   "streams",
                                               "memory", "workload", "all"};

// The report's figures: generic, then the workload's (complete_report), then the run's
// (simulator speed, output files).
report::RunReport build_simulate_report(const scenario::SimulateOptions& options,
                                        const scenario::SimulationInputs& inputs,
                                        std::span<const RankResult> results, double wall_s);

void print_simulate_report(const scenario::SimulateOptions& options,
                           const scenario::SimulationInputs& inputs,
                           std::span<const RankResult> results, double wall_s, std::ostream& out);

// --report: the HTML form of the same report, written whole (process 0 only).
void write_simulate_html(const scenario::SimulateOptions& options,
                         const scenario::SimulationInputs& inputs,
                         std::span<const RankResult> results, double wall_s);

}  // namespace perfsim::cli
