#pragma once
// A framework's switches (validation/framework_presets.hpp) applied to an LLM layout: every
// switch the user left unsaid takes the framework's value, where simulate can run it. One rule
// for `validate runs` (a row's empty cells) and `simulate --framework` (options not given).
#include <string>
#include <vector>

#include "scenario/llm_simulate_options.hpp"
#include "validation/framework_presets.hpp"

namespace perfsim::scenario {

// Which switches the user stated (a row's cell, an option on the command line); those keep
// their value whatever the framework says.
struct StatedSwitches {
  bool attention = false;
  bool dropout = false;
  bool etp = false;
  bool fp8_param_gather = false;
  bool grad_reduce_dtype = false;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool tp_comm_overlap = false;
  bool overlap_p2p_comm = false;
  bool p2p_scatter_gather = false;
  bool moe_router_fusion = false;
  bool moe_permute_fusion = false;
  bool cross_entropy_fusion = false;
  bool get_batch_sync = false;
  bool timer_syncs = false;
};

// What the model is, as far as the framework's switches care: its recipes set some only on
// MoE models, and Transformer Engine's userbuffer overlap does not run with multi-latent
// attention.
struct FrameworkModelTraits {
  bool moe = false;
  bool mla = false;
};

// Sets every unstated switch the framework sets, reading the layout (dtype, FP8 recipe, ZeRO
// stage, sequence parallelism, EP) from `options`, which must already hold the user's values.
// Returns the command-line spelling of each switch it turned on or changed, for the output.
std::vector<std::string> apply_framework_switches(const validation::FrameworkPreset& framework,
                                                  FrameworkModelTraits model,
                                                  const StatedSwitches& stated,
                                                  LlmSimulateOptions& options);

}  // namespace perfsim::scenario
