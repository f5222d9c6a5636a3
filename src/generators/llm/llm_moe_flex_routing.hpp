#pragma once
// How many distinct GPUs and nodes one token's top-k experts fall on, in expectation, under
// uniform (force-balanced) routing: what DeepEP / HybridEP send per token (one copy per
// distinct destination node over the network, one per distinct GPU over NVLink; README "Flex
// token dispatcher"). Experts sit in contiguous blocks (Megatron-Core: EP rank r holds experts
// r E/EP .. (r+1) E/EP - 1; a node's EP ranks are consecutive), so a unit (GPU or node) holds a
// contiguous block of e_u experts, and
//   E[distinct units] = sum over units of P(the unit holds one of the token's experts),
//   P(not hit) = C(M - s, k) / C(M, k)  (hypergeometric: k experts drawn from M, s of them the
//                                        unit's),
// with M = E and s = e_u for plain top-k. Group-limited routing (moe_router_num_groups /
// moe_router_group_topk: the experts cut into contiguous groups, group_topk of them chosen, the
// k experts among theirs) is taken as group_topk groups chosen uniformly and the k experts
// uniformly among their M = group_topk E / groups experts; s is then the unit's experts inside
// the chosen groups, whose distribution is summed over exactly.
#include <cstdint>

namespace perfsim::generators::llm {

struct UniformRouting {
  int experts = 0;
  int top_k = 0;
  int groups = 0;      // moe_router_num_groups; 0: plain top-k
  int group_topk = 0;  // moe_router_group_topk; 0: plain top-k
};

// Expected distinct units of `experts_per_unit` contiguous experts per token. Throws
// RuntimeFailure when the experts do not split into such units or top_k exceeds the experts it
// is drawn from.
double expected_distinct_units(const UniformRouting& routing, int experts_per_unit);

}  // namespace perfsim::generators::llm
