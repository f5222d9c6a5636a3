#pragma once
// The host-overhead asset: a HostOverheads set as human-readable JSON (cereal), e.g.
//   {"host_overheads": {"format": "perfsim-host-overheads", "version": 1,
//     "source_traces": 8, "launch": {...}, "all_ops": {"t1": {"mean_us": .., "stddev_us": ..,
//     "count": ..}, ...}, "t4_all": {...}, "per_op": [{"op": "aten::mm", "t1": {...}, ...}],
//     "t4_per_runtime": [{"runtime_api": "cudaLaunchKernel", "t4": {...}}]}}
#include <string>

#include "perfsim/host_overheads.hpp"

namespace perfsim::overheads {

std::string host_overheads_to_json(const HostOverheads& overheads);

// `source` names the input in errors. Throws InputError for invalid JSON (with the byte
// offset), a missing field, a value of the wrong type, a wrong format tag or version, a
// duration that is negative, not finite or above io::kMaxDurationUs, a count that is not a
// non-negative integer, or a launch fraction outside [0, 1].
HostOverheads host_overheads_from_json(const std::string& json, const std::string& source);

// Writes the asset; throws RuntimeFailure naming the file when it cannot be written.
void save_host_overheads(const HostOverheads& overheads, const std::string& path);

// Reads an asset written by save_host_overheads; errors name the file.
HostOverheads load_host_overheads(const std::string& path);

}  // namespace perfsim::overheads
