#pragma once
// The attributes the LLM generator tags each op with, as the generator tests read them: its
// phase (RankTraceBuilder::set_phase: "forward", "recompute", "backward", "grad-sync",
// "grad-clip", ...) and integer tags such as "layer" and "micro_batch".
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "perfsim/trace.hpp"

namespace perfsim::test_support {

// The op's phase, or "" for an op without one (annotations).
inline std::string op_phase(const Op& op) {
  const Attribute* phase = op.find_attribute("phase");
  return phase ? std::get<std::string>(phase->value) : std::string();
}

// An integer attribute of the op, or -1 where the op has none of that name.
inline std::int64_t op_int_attribute(const Op& op, std::string_view name) {
  const Attribute* attribute = op.find_attribute(name);
  return attribute ? std::get<std::int64_t>(attribute->value) : -1;
}

// Ops counted by name in the forward and in the backward phase, as the MoE op-inventory tests
// count them (derive to add counts of one's own).
struct PhaseOpCounts {
  std::map<std::string, int> forward, backward;
  int fwd(const std::string& name) const { return of(forward, name); }
  int bwd(const std::string& name) const { return of(backward, name); }
  // Counts `op` by name when `phase` (its op_phase) is the forward or the backward.
  void count(const Op& op, const std::string& phase) {
    if (phase == "forward")
      ++forward[op.name];
    else if (phase == "backward")
      ++backward[op.name];
  }
  static int of(const std::map<std::string, int>& by_name, const std::string& name) {
    const auto found = by_name.find(name);
    return found == by_name.end() ? 0 : found->second;
  }
};

}  // namespace perfsim::test_support
