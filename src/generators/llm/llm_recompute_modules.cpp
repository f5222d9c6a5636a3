#include "generators/llm/llm_recompute_modules.hpp"

#include <vector>

#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

bool is_separator(char c) {
  return c == ',' || c == ' ' || c == '+' || c == '\t';
}

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
    if (name == "core_attn") {
      modules.core_attn = true;
    } else if (name == "layernorm") {
      modules.layernorm = true;
    } else if (name == "moe_act") {
      modules.moe_act = true;
    } else if (name == "mla_up_proj") {
      modules.mla_up_proj = true;
    } else if (name == "mlp") {
      modules.mlp = true;
    } else if (name == "shared_experts") {
      modules.shared_experts = true;
    } else if (name == "moe") {
      modules.moe = true;
    } else {
      throw InputError(file, field,
                       "unknown recompute module \"" + std::string(name) +
                           "\" (Megatron-Core's names: core_attn, layernorm, moe_act, "
                           "mla_up_proj, mlp, moe, shared_experts)");
    }
  }
  return modules;
}

std::string recompute_modules_name(const RecomputeModules& modules) {
  std::string name;
  auto add = [&](bool on, const char* module) {
    if (!on)
      return;
    if (!name.empty())
      name += '+';
    name += module;
  };
  add(modules.core_attn, "core_attn");
  add(modules.layernorm, "layernorm");
  add(modules.moe_act, "moe_act");
  add(modules.mla_up_proj, "mla_up_proj");
  add(modules.mlp, "mlp");
  add(modules.shared_experts, "shared_experts");
  add(modules.moe, "moe");
  return name;
}

}  // namespace perfsim::generators::llm
