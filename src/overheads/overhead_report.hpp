#pragma once
// The table `perfsim overheads extract` prints.
#include <string>

#include "perfsim/host_overheads.hpp"

namespace perfsim::overheads {

// Pooled T1..T5 means, then per type the `top` ops with the most samples (mean, std, count),
// then T4 per runtime API.
std::string format_overheads_table(const HostOverheads& overheads, int top);

}  // namespace perfsim::overheads
