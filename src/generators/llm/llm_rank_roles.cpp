#include "generators/llm/llm_rank_roles.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

// Braces: no group name the layout produces ("tp/3", "dp/0", ...) can collide with them.
constexpr const char* kTensorGroup = "{tp}";
constexpr const char* kDataGroup = "{dp}";
constexpr const char* kPipelineGroup = "{pp}";
constexpr const char* kExpertGroup = "{ep}";
constexpr const char* kExpertDataGroup = "{edp}";
constexpr const char* kExpertTensorGroup = "{etp}";
constexpr const char* kTensorContextGroup = "{tpcp}";
constexpr const char* kTensorDataContextGroup = "{tpdpcp}";
constexpr const char* kExpertModelParallelGroup = "{etpp}";
constexpr const char* kGradientNormGroup = "{gradnorm}";
constexpr const char* kEmbeddingGroup = "{emb}";
constexpr int kPipelinePrevious = -2;
constexpr int kPipelineNext = -3;
constexpr int kContextPrevious = -4;
constexpr int kContextNext = -5;
constexpr int kTensorPrevious = -6;
constexpr int kTensorNext = -7;

}  // namespace

RankRoles rank_roles(const ParallelConfig& parallel, int rank) {
  const RankCoordinates c = coordinates_of(parallel, rank);
  RankRoles roles;
  roles.stage = c.pp;
  roles.tp_group = tp_group_name(parallel, rank);
  roles.dp_group = dp_group_name(parallel, rank);
  roles.pp_group = pp_group_name(parallel, rank);
  roles.ep_group = ep_group_name(parallel, rank);
  roles.expert_dp_group = expert_gradient_group_name(parallel, rank);
  roles.expert_tp_group = expert_tp_group_name(parallel, rank);
  roles.tp_cp_group = tp_cp_group_name(parallel, rank);
  roles.tp_dp_cp_group = tp_dp_cp_group_name(parallel, rank);
  roles.expert_model_parallel_group = expert_model_parallel_group_name(parallel, rank);
  roles.gradient_norm_group = gradient_norm_group_name(parallel, rank);
  roles.embedding_group = embedding_group_name(parallel, rank);
  roles.pipeline_previous =
      rank_of(parallel, {c.tp, c.dp, (c.pp + parallel.pp - 1) % parallel.pp, c.cp});
  roles.pipeline_next = rank_of(parallel, {c.tp, c.dp, (c.pp + 1) % parallel.pp, c.cp});
  roles.context_previous =
      rank_of(parallel, {c.tp, c.dp, c.pp, (c.cp + parallel.cp - 1) % parallel.cp});
  roles.context_next = rank_of(parallel, {c.tp, c.dp, c.pp, (c.cp + 1) % parallel.cp});
  roles.tensor_previous =
      rank_of(parallel, {(c.tp + parallel.tp - 1) % parallel.tp, c.dp, c.pp, c.cp});
  roles.tensor_next = rank_of(parallel, {(c.tp + 1) % parallel.tp, c.dp, c.pp, c.cp});
  return roles;
}

RankRoles placeholder_roles(int stage) {
  RankRoles roles;
  roles.stage = stage;
  roles.tp_group = kTensorGroup;
  roles.dp_group = kDataGroup;
  roles.pp_group = kPipelineGroup;
  roles.ep_group = kExpertGroup;
  roles.expert_dp_group = kExpertDataGroup;
  roles.expert_tp_group = kExpertTensorGroup;
  roles.tp_cp_group = kTensorContextGroup;
  roles.tp_dp_cp_group = kTensorDataContextGroup;
  roles.expert_model_parallel_group = kExpertModelParallelGroup;
  roles.gradient_norm_group = kGradientNormGroup;
  roles.embedding_group = kEmbeddingGroup;
  roles.pipeline_previous = kPipelinePrevious;
  roles.pipeline_next = kPipelineNext;
  roles.context_previous = kContextPrevious;
  roles.context_next = kContextNext;
  roles.tensor_previous = kTensorPrevious;
  roles.tensor_next = kTensorNext;
  return roles;
}

void substitute_roles(std::span<Op> ops, const RankRoles& roles,
                      const std::string& template_source) {
  const std::array<std::pair<const char*, const std::string*>, 11> groups{
      {{kTensorGroup, &roles.tp_group},
       {kDataGroup, &roles.dp_group},
       {kPipelineGroup, &roles.pp_group},
       {kExpertGroup, &roles.ep_group},
       {kExpertDataGroup, &roles.expert_dp_group},
       {kExpertTensorGroup, &roles.expert_tp_group},
       {kTensorContextGroup, &roles.tp_cp_group},
       {kTensorDataContextGroup, &roles.tp_dp_cp_group},
       {kExpertModelParallelGroup, &roles.expert_model_parallel_group},
       {kGradientNormGroup, &roles.gradient_norm_group},
       {kEmbeddingGroup, &roles.embedding_group}}};
  const std::array<std::pair<int, int>, 6> peers{{{kPipelinePrevious, roles.pipeline_previous},
                                                  {kPipelineNext, roles.pipeline_next},
                                                  {kContextPrevious, roles.context_previous},
                                                  {kContextNext, roles.context_next},
                                                  {kTensorPrevious, roles.tensor_previous},
                                                  {kTensorNext, roles.tensor_next}}};
  for (Op& op : ops) {
    if (!op.comm)
      continue;
    CommInfo& comm = *op.comm;
    auto not_a_role = [&](const std::string& what) {
      return InputError(template_source, "op " + std::to_string(op.id),
                        "the stage template names " + what +
                            ", not one of the rank's roles (generators/llm/llm_rank_roles.hpp)");
    };
    if (comm.root_rank != -1)
      throw not_a_role("root rank " + std::to_string(comm.root_rank));
    if (is_point_to_point(comm.kind)) {
      const auto peer = std::find_if(peers.begin(), peers.end(), [&](const auto& pair) {
        return pair.first == comm.peer_rank;
      });
      if (peer == peers.end())
        throw not_a_role("peer rank " + std::to_string(comm.peer_rank));
      comm.peer_rank = peer->second;
      continue;
    }
    if (comm.peer_rank != -1)
      throw not_a_role("peer rank " + std::to_string(comm.peer_rank));
    const auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& pair) {
      return comm.process_group == pair.first;
    });
    if (group == groups.end())
      throw not_a_role("group '" + comm.process_group + "'");
    comm.process_group = *group->second;
  }
}

void substitute_roles(Trace& trace, const RankRoles& roles, const std::string& template_source) {
  substitute_roles(std::span<Op>(trace.ops), roles, template_source);
}

}  // namespace perfsim::generators::llm
