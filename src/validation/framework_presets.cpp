#include "validation/framework_presets.hpp"

#include <array>

#include "perfsim/error.hpp"

namespace perfsim::validation {
namespace {

std::array<FrameworkPreset, 5> make_presets() {
  FrameworkPreset core;
  core.name = "megatron-core";
  FrameworkPreset lm2021;
  lm2021.name = "megatron-lm-2021";
  lm2021.attention = "unfused";
  lm2021.dropout = true;
  lm2021.get_batch_sync = true;
  lm2021.timer_syncs = true;
  lm2021.p2p_scatter_gather = true;
  lm2021.overlap_p2p_comm = false;
  FrameworkPreset deepspeed;
  deepspeed.name = "megatron-deepspeed";
  deepspeed.attention = "unfused";
  deepspeed.dropout = true;
  deepspeed.get_batch_sync = true;
  FrameworkPreset nemo;
  nemo.name = "nemo";
  nemo.overlap_grad_reduce = true;
  nemo.overlap_param_gather = true;
  nemo.tp_comm_overlap_with_sequence_parallel = true;
  nemo.tp_comm_overlap_on_moe = true;
  FrameworkPreset bridge;
  bridge.name = "megatron-bridge";
  bridge.overlap_grad_reduce = true;
  bridge.overlap_param_gather = true;
  bridge.tp_comm_overlap_with_sequence_parallel = true;
  bridge.grad_reduce_dtype = "bf16";
  bridge.cross_entropy_fusion = "te";
  bridge.fp8_param_gather_on_fp8 = true;
  bridge.moe_router_and_permute_fusion = true;
  bridge.expert_tp_one = true;
  return {core, lm2021, deepspeed, nemo, bridge};
}

const std::array<FrameworkPreset, 5>& presets() {
  static const std::array<FrameworkPreset, 5> table = make_presets();
  return table;
}

}  // namespace

const FrameworkPreset& framework_preset(std::string_view name) {
  if (name.empty())
    return presets().front();
  for (const FrameworkPreset& preset : presets())
    if (preset.name == name)
      return preset;
  std::string known;
  for (std::string_view each : framework_names())
    known += (known.empty() ? "" : ", ") + std::string(each);
  throw InputError("framework", std::string(name), "unknown framework (known: " + known + ")");
}

std::vector<std::string_view> framework_names() {
  std::vector<std::string_view> names;
  for (const FrameworkPreset& preset : presets())
    names.push_back(preset.name);
  return names;
}

}  // namespace perfsim::validation
