#pragma once
// Process groups by kind: generated layouts have one group per TP/DP/PP slice and one per
// point-to-point pair, so reports aggregate them ("tp/3" and "tp/12" are both "tp").
#include <functional>
#include <string>

namespace perfsim::report {

// "tp/3" -> "tp", "p2p:0->16" -> "p2p", "" -> "world"; lower case, anything but [a-z0-9_]
// becomes '_' (the kind is also a JSON key and a column name).
std::string group_kind(const std::string& group);

// A workload may know better (an LLM's point-to-point pairs inside a context-parallel ring
// are "cp", not pipeline transfers).
using GroupKindOf = std::function<std::string(const std::string& group)>;

// "tp" -> "tensor-parallel", "p2p" -> "pipeline p2p", "pp" -> "pipeline-group"; unknown
// kinds as they are.
std::string group_kind_label(const std::string& kind);

}  // namespace perfsim::report
