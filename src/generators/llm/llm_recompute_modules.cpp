#include "generators/llm/llm_recompute_modules.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

bool is_separator(char c) {
  return c == ',' || c == ' ' || c == '+' || c == '\t';
}

// Megatron-Core's names and their flags, in the order recompute_modules_name joins them: the
// parser and the name read this one list.
constexpr std::array<std::pair<std::string_view, bool RecomputeModules::*>, 7> kModules{{
    {"core_attn", &RecomputeModules::core_attn},
    {"layernorm", &RecomputeModules::layernorm},
    {"moe_act", &RecomputeModules::moe_act},
    {"mla_up_proj", &RecomputeModules::mla_up_proj},
    {"mlp", &RecomputeModules::mlp},
    {"shared_experts", &RecomputeModules::shared_experts},
    {"moe", &RecomputeModules::moe},
}};

}  // namespace

RecomputeModules parse_recompute_modules(std::string_view text, const std::string& file,
                                         const std::string& field) {
  std::vector<std::string_view> names;
  std::size_t start = 0;
  while (start < text.size()) {
    while (start < text.size() && is_separator(text[start]))
      ++start;
    std::size_t end = start;
    while (end < text.size() && !is_separator(text[end]))
      ++end;
    if (end > start)
      names.push_back(text.substr(start, end - start));
    start = end;
  }
  if (names.empty())
    return {};
  RecomputeModules modules;
  modules.core_attn = false;  // a list replaces Megatron's default ["core_attn"]
  for (std::string_view name : names) {
    const auto module = std::find_if(kModules.begin(), kModules.end(),
                                     [&](const auto& entry) { return entry.first == name; });
    if (module == kModules.end()) {
      std::string known;
      for (const auto& entry : kModules)
        known += (known.empty() ? "" : ", ") + std::string(entry.first);
      throw InputError(file, field,
                       "unknown recompute module \"" + std::string(name) +
                           "\" (Megatron-Core's names: " + known + ")");
    }
    modules.*(module->second) = true;
  }
  return modules;
}

std::string recompute_modules_name(const RecomputeModules& modules) {
  std::string name;
  for (const auto& [module, flag] : kModules) {
    if (!(modules.*flag))
      continue;
    if (!name.empty())
      name += '+';
    name += module;
  }
  return name;
}

}  // namespace perfsim::generators::llm
