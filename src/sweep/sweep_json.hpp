#pragma once
// `perfsim sweep merge --format json`: the merged table as one object, schema perfsim-sweep/1
// (docs/output-formats.md). Cells keep their column's type; a NaN (a figure the task lacks) is
// null.
#include <string>

#include "sweep/sweep_merge.hpp"
#include "sweep/sweep_spec.hpp"

namespace perfsim::sweep {

inline constexpr const char* kSweepJsonSchema = "perfsim-sweep/1";

std::string merged_to_json(const SweepSpec& spec, const MergedSweep& merged);

}  // namespace perfsim::sweep
