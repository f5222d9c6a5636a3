#pragma once
// Rank lists as users type them: "all", or comma-separated ranks and inclusive ranges
// ("0,8-15"). Used by --timeline-ranks.
#include <string_view>
#include <vector>

namespace perfsim::results {

// The ranks of `text`, ascending and without repeats. Throws InputError (location `option`)
// on a malformed item, a reversed range or a rank outside 0..world_size-1.
std::vector<int> parse_rank_list(std::string_view text, int world_size, std::string_view option);

}  // namespace perfsim::results
