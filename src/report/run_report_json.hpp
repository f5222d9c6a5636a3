#pragma once
// Machine-readable forms of a RunReport (`--format json|csv`), documented in
// docs/output-formats.md. JSON schema "perfsim-simulate/1": every time in us, every size in
// bytes, fractions in 0..1; a field is added without a version change, renamed or removed only
// with the next version.
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "perfsim/rank_result.hpp"
#include "report/group_kinds.hpp"
#include "report/run_report.hpp"

namespace perfsim::report {

inline constexpr const char* kSimulateSchema = "perfsim-simulate/1";

// The report's figures, plus rank classes and per-kind communication from `results`.
nlohmann::ordered_json run_report_json(const RunReport& report, std::span<const RankResult> results,
                                       const GroupKindOf& kind_of);

// Long form, one figure a row: "figure,value,unit" (figure names are the JSON paths, dotted:
// "breakdown.compute.slowest_rank_us", "memory.stage.0.total_bytes").
std::string run_report_csv(const RunReport& report);

}  // namespace perfsim::report
