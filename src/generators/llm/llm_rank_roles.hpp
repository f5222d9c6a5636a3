#pragma once
// What a generated rank's trace depends on besides the model, the layout and its pipeline
// stage: the names of the process groups it runs collectives on and the ranks of its
// point-to-point neighbours. The generator never sees a rank's tensor-, context- or
// data-parallel index: it emits one template per stage with placeholder roles, the same for
// every rank of the stage, and a rank's trace is that template with the rank's own roles put
// in (llm_rank_generator.hpp). Every rank of a stage therefore runs its stage's program up to
// the names of its groups and neighbours by construction, which is what lets
// `simulate --fold` prove a whole stage from a handful of collectives
// (src/scenario/folded_simulation.hpp). A generator that needs another rank-dependent value
// must add it here, either as a role (a name or a neighbour) or as part of the template's key.
#include <span>
#include <string>

#include "generators/llm/llm_parallel_config.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::generators::llm {

struct RankRoles {
  int stage = 0;
  std::string tp_group;
  std::string dp_group;  // DP x CP: the ranks that reduce the gradients
  std::string pp_group;
  std::string ep_group;         // expert parallel: routed tokens' all-to-alls (MoE)
  std::string expert_dp_group;  // the experts' gradients (the DP group when EP is 1)
  std::string expert_tp_group;  // the experts' tensor parallel group (the TP group by default)
  std::string tp_cp_group;      // the MoE router's token counts (Megatron's tp_cp_group)
  std::string tp_dp_cp_group;   // FP8 amax reductions, routers' expert bias (tp_dp_cp group)
  // The expert optimizer's gradient norm (ETP x EP x PP, Megatron-Core's expt_tp_pp_group).
  std::string expert_model_parallel_group;
  // The dense optimizer's gradient norm: TP x PP, or the job with the distributed optimizer
  // (gradient_norm_group_name).
  std::string gradient_norm_group;
  // The first and last stage's ranks of this TP/CP/DP index (embedding_group_name): a rank
  // of a middle stage is not a member, and its stage's template never names it.
  std::string embedding_group;
  int pipeline_previous = -1;  // the previous / next stage's rank (a ring when interleaved)
  int pipeline_next = -1;
  int context_previous = -1;  // neighbours in the context-parallel ring
  int context_next = -1;
  int tensor_previous = -1;  // neighbours in the TP ring (userbuffer ring exchange)
  int tensor_next = -1;
};

// `rank`'s own roles.
RankRoles rank_roles(const ParallelConfig& parallel, int rank);

// The placeholders a stage template is generated with: group names no real group has and
// negative neighbour ranks (-1 stays "no peer").
RankRoles placeholder_roles(int stage);

// The template with `roles` in place of its placeholders: every collective's group and every
// send/recv peer. Throws InputError naming `template_source` when the template names a group or
// a peer that is not a placeholder (a generator that looked at a real rank).
void substitute_roles(Trace& trace, const RankRoles& roles, const std::string& template_source);
// The same on some of the template's ops (a step of a streamed template: trace_sink.hpp).
void substitute_roles(std::span<Op> ops, const RankRoles& roles,
                      const std::string& template_source);

}  // namespace perfsim::generators::llm
