// The generator sees a rank only through its roles (generators/llm/llm_rank_roles.hpp): a
// rank's trace is its stage template with the rank's group names and neighbours substituted.
// These tests check the roles against the layout's groups and that a template naming a real
// group or rank (a generator that looked past its roles) is rejected, not silently folded.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_rank_roles.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

TransformerConfig tiny_gpt() {
  TransformerConfig model;
  model.name = "tiny";
  model.layers = 4;
  model.hidden = 256;
  model.heads = 4;
  model.kv_heads = 4;
  model.ffn_hidden = 1024;
  model.vocab = 1024;
  model.seq_len = 256;
  model.micro_batch = 1;
  model.global_batch = 8;
  return model;
}

TEST(RankRoles, NameTheRanksGroupsAndNeighbours) {
  ParallelConfig parallel;
  parallel.tp = 2;
  parallel.cp = 2;
  parallel.dp = 2;
  parallel.pp = 3;
  // rank = tp + 2 (cp + 2 (dp + 2 pp)): rank 13 is tp 1, cp 0, dp 1, pp 1.
  const RankRoles roles = rank_roles(parallel, 13);
  EXPECT_EQ(roles.stage, 1);
  EXPECT_EQ(roles.tp_group, tp_group_name(parallel, 13));
  EXPECT_EQ(roles.dp_group, dp_group_name(parallel, 13));
  EXPECT_EQ(roles.pp_group, pp_group_name(parallel, 13));
  EXPECT_EQ(roles.gradient_norm_group, gradient_norm_group_name(parallel, 13));
  EXPECT_EQ(roles.pipeline_previous, 5);
  EXPECT_EQ(roles.pipeline_next, 21);
  EXPECT_EQ(roles.context_previous, 15);
  EXPECT_EQ(roles.context_next, 15);
}

TEST(RankRoles, EveryCollectiveOfAnInstanceIsOnTheRanksOwnGroupsAndNeighbours) {
  ParallelConfig parallel;
  parallel.tp = 2;
  parallel.cp = 2;
  parallel.dp = 2;
  parallel.pp = 2;
  parallel.zero_stage = 1;
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    const Trace trace = generate_llm_rank(tiny_gpt(), parallel, rank);
    const RankRoles roles = rank_roles(parallel, rank);
    const std::set<std::string> groups{roles.tp_group, roles.dp_group, roles.pp_group,
                                       roles.gradient_norm_group, roles.embedding_group};
    const std::set<int> peers{roles.pipeline_previous, roles.pipeline_next, roles.context_previous,
                              roles.context_next};
    std::size_t collectives = 0;
    for (const Op& op : trace.ops) {
      if (!op.comm)
        continue;
      ++collectives;
      if (is_point_to_point(op.comm->kind))
        EXPECT_TRUE(peers.contains(op.comm->peer_rank)) << "rank " << rank << " op " << op.id;
      else
        EXPECT_TRUE(groups.contains(op.comm->process_group)) << "rank " << rank << " op " << op.id;
    }
    EXPECT_GT(collectives, 0u);
    EXPECT_EQ(trace.rank, rank);
  }
}

TEST(RankRoles, ATemplateNamingARealGroupOrRankIsRejected) {
  ParallelConfig parallel;
  parallel.tp = 2;
  parallel.dp = 2;
  StageTemplate stage_template = generate_llm_stage_template(tiny_gpt(), parallel, 0);
  StageTemplate leaked_group = stage_template;
  StageTemplate leaked_peer = stage_template;
  for (Op& op : leaked_group.trace.ops) {
    if (op.comm && !is_point_to_point(op.comm->kind)) {
      op.comm->process_group = "tp/0";
      break;
    }
  }
  EXPECT_THROW(instantiate_llm_rank(leaked_group, parallel, 1), InputError);
  Op send;
  send.id = 1 << 20;
  send.name = "nccl:send";
  send.comm = CommInfo{};
  send.comm->kind = CollectiveKind::kSend;
  send.comm->peer_rank = 3;
  leaked_peer.trace.ops.push_back(send);
  EXPECT_THROW(instantiate_llm_rank(leaked_peer, parallel, 1), InputError);
  EXPECT_NO_THROW(instantiate_llm_rank(stage_template, parallel, 1));
  // A template of another stage.
  parallel.pp = 2;
  EXPECT_THROW(
      instantiate_llm_rank(generate_llm_stage_template(tiny_gpt(), parallel, 1), parallel, 0),
      RuntimeFailure);
}

}  // namespace
}  // namespace perfsim::generators::llm
