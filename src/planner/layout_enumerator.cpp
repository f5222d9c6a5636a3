#include "planner/layout_enumerator.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "generators/llm/llm_gradient_dtype.hpp"
#include "generators/llm/llm_pipeline_split.hpp"
#include "generators/llm/llm_rank_mesh.hpp"
#include "perfsim/error.hpp"

namespace perfsim::planner {
namespace {

namespace llm = generators::llm;

std::vector<int> divisors(int n) {
  std::vector<int> result;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0)
      result.push_back(d);
  }
  return result;
}

bool tensor_parallel_divides(const llm::TransformerConfig& model, int tp) {
  const bool kv_fits = model.kv_heads % tp == 0 || tp % model.kv_heads == 0;
  return model.heads % tp == 0 && model.ffn_hidden % tp == 0 && model.vocab % tp == 0 && kv_fits;
}

// EP degrees for a MoE model: the divisors of DP x CP that divide the experts; 1 for dense.
std::vector<int> expert_parallel_degrees(const llm::TransformerConfig& model, int data_ranks) {
  if (!model.is_moe())
    return {1};
  std::vector<int> degrees;
  for (int ep : divisors(data_ranks))
    if (model.moe.num_experts % ep == 0)
      degrees.push_back(ep);
  return degrees;
}

// Expert TP degrees for a MoE model: TP (Megatron's default) and, with TP > 1, 1 (whole experts,
// only the routed tokens move: Megatron-Core's MoE guide's usual choice for fine-grained
// experts); ETP equal to TP only for dense models.
std::vector<int> expert_tensor_parallel_degrees(const llm::TransformerConfig& model, int tp) {
  if (!model.is_moe() || tp == 1)
    return {tp};
  return {tp, 1};
}

// (ETP, EP) pairs: for each expert TP degree, the EP degrees its expert grid can hold.
std::vector<std::pair<int, int>> expert_layouts(const llm::TransformerConfig& model, int tp,
                                                int data_ranks) {
  std::vector<std::pair<int, int>> layouts;
  for (int etp : expert_tensor_parallel_degrees(model, tp))
    for (int ep : expert_parallel_degrees(model, tp * data_ranks / etp))
      layouts.emplace_back(etp, ep);
  return layouts;
}

// Whether PP x virtual stages split the layers (with the embedding and loss counted as
// layers when asked).
bool splits_layers(const llm::TransformerConfig& model, const EnumerationLimits& limits, int pp,
                   int virtual_stages) {
  llm::ParallelConfig split;
  split.pp = pp;
  split.virtual_stages = virtual_stages;
  split.account_for_embedding = limits.account_for_embedding;
  split.account_for_loss = limits.account_for_loss;
  split.pp_layout = limits.pp_layout;
  return llm::pipeline_split_problem(model, split).empty();
}

// A PP that does not divide the layers (and no other uneven split asked for): Megatron-Core's
// --decoder-first/last-pipeline-num-layers as the published DeepSeek-V3 recipes set them
// (61 layers: PP 8 first 7 / last 6, PP 16 first 3 / last 2): every middle stage holds
// ceil(L / PP) layers and the first and the last split the rest, the first the larger half
// (they also hold the embedding, the LM head and loss). {0, 0} where that leaves either of them
// empty; PP 1 never needs it.
std::pair<int, int> first_last_stage_split(const llm::TransformerConfig& model, int pp) {
  if (pp < 2)
    return {0, 0};
  const int middle = (model.layers + pp - 1) / pp;
  const int rest = model.layers - (pp - 2) * middle;
  if (rest < 2)
    return {0, 0};
  llm::ParallelConfig split;
  split.pp = pp;
  split.first_stage_layers = rest - rest / 2;
  split.last_stage_layers = rest / 2;
  if (!llm::pipeline_split_problem(model, split).empty())
    return {0, 0};
  return {split.first_stage_layers, split.last_stage_layers};
}

// Whether rank 0's EP group has the same number of ranks on every node it spans, nodes holding
// `gpus_per_node` consecutive ranks: with_expert_node_layout refuses a flex dispatch over a
// group that is not (topology::resolve_group's balance), and the planner's topologies place
// ranks this way (topology::Topology::node_of).
bool expert_group_balanced_on_nodes(const llm::ParallelConfig& layout, int gpus_per_node) {
  const std::string ep = llm::ep_group_name(layout, 0);
  for (const ProcessGroup& group : llm::process_groups_of(layout, 0)) {
    if (group.name != ep)
      continue;
    std::map<int, int> ranks_by_node;
    for (int rank : group.ranks)
      ++ranks_by_node[rank / gpus_per_node];
    const int first = ranks_by_node.begin()->second;
    return std::all_of(ranks_by_node.begin(), ranks_by_node.end(),
                       [first](const auto& entry) { return entry.second == first; });
  }
  return true;
}

// The flex dispatcher where the generator models it (llm::validate's flex checks): a MoE model,
// EP > 1, expert TP 1, and a balanced EP group.
bool flex_dispatcher_allowed(const llm::TransformerConfig& model, const llm::ParallelConfig& layout,
                             int gpus_per_node) {
  return model.is_moe() && layout.ep > 1 && layout.expert_tp() == 1 &&
         expert_group_balanced_on_nodes(layout, gpus_per_node);
}

}  // namespace

std::vector<llm::ParallelConfig> enumerate_layouts(const llm::TransformerConfig& model,
                                                   const EnumerationLimits& limits) {
  if (limits.gpus <= 0)
    throw InputError("--gpus", "", "must be positive, got " + std::to_string(limits.gpus));
  const int global_batch = limits.global_batch > 0 ? limits.global_batch : model.global_batch;
  constexpr llm::Recompute kRecomputes[] = {llm::Recompute::kNone, llm::Recompute::kSelective,
                                            llm::Recompute::kFull};
  std::vector<llm::ParallelConfig> layouts;
  for (int tp : divisors(limits.gpus)) {
    if (limits.gpus_per_node % tp != 0 || !tensor_parallel_divides(model, tp))
      continue;
    for (int cp : divisors(limits.gpus / tp)) {
      if (cp > limits.max_context_parallel ||
          (cp > 1 && (model.attention != llm::AttentionKernel::kFlash ||
                      model.seq_len % (2 * cp) != 0 || model.window_size > 0)))
        continue;
      for (int pp : divisors(limits.gpus / (tp * cp))) {
        // A layout string fixes PP x virtual stages: a PP that does not divide the layers may
        // still be the layout's with interleaving. Without one (nor the embedding or loss
        // counted as a layer), such a PP takes the first / last stage split, uninterleaved.
        const bool even_split = splits_layers(model, limits, pp, 1);
        const bool other_uneven_split =
            !limits.pp_layout.empty() || limits.account_for_embedding || limits.account_for_loss;
        const auto [first_layers, last_layers] =
            even_split || other_uneven_split ? std::pair{0, 0} : first_last_stage_split(model, pp);
        if (limits.pp_layout.empty() && !even_split && first_layers == 0)
          continue;
        const int dp = limits.gpus / (tp * cp * pp);
        if (global_batch % dp != 0)
          continue;
        for (int micro : divisors(global_batch / dp)) {
          if (micro > limits.max_micro_batch)
            continue;
          const int micro_batches = global_batch / (dp * micro);
          for (int virtual_stages = 1; virtual_stages <= limits.max_virtual_stages;
               ++virtual_stages) {
            // Interleaving over 2 stages runs with overlap_p2p_comm, every layout's default.
            if (virtual_stages > 1 && (pp < 2 || micro_batches % pp != 0 || first_layers > 0))
              continue;
            if ((virtual_stages > 1 || !limits.pp_layout.empty()) &&
                !splits_layers(model, limits, pp, virtual_stages))
              continue;
            for (bool sequence_parallel : {false, true}) {
              if (sequence_parallel && (tp == 1 || (model.seq_len / cp) % tp != 0))
                continue;
              for (llm::Recompute recompute : kRecomputes) {
                for (int zero = 0; zero <= (dp * cp > 1 ? 3 : 0); ++zero) {
                  for (const auto& [etp, ep] : expert_layouts(model, tp, dp * cp)) {
                    // Megatron's MoE rules: SP with TP (llm::validate); ZeRO-3 is not
                    // modelled with MLA or MTP (llm::validate refuses it).
                    if (model.is_moe() && tp > 1 && !sequence_parallel)
                      continue;
                    if (zero == 3 && (model.is_mla() || model.mtp_num_layers > 0))
                      continue;
                    llm::ParallelConfig layout;
                    layout.ep = ep;
                    layout.etp = etp == tp ? 0 : etp;
                    layout.tp = tp;
                    layout.pp = pp;
                    layout.dp = dp;
                    layout.cp = cp;
                    layout.virtual_stages = virtual_stages;
                    layout.account_for_embedding = limits.account_for_embedding;
                    layout.account_for_loss = limits.account_for_loss;
                    layout.pp_layout = limits.pp_layout;
                    layout.first_stage_layers = first_layers;
                    layout.last_stage_layers = last_layers;
                    layout.micro_batch = micro;
                    layout.global_batch = global_batch;
                    layout.sequence_parallel = sequence_parallel;
                    layout.recompute = recompute;
                    if (recompute == llm::Recompute::kSelective)
                      layout.recompute_modules = limits.recompute_modules;
                    layout.zero_stage = zero;
                    layout.overlap_tp_backward = limits.overlap_tp_backward;
                    layout.tp_comm_overlap =
                        limits.tp_comm_overlap && sequence_parallel &&
                        (model.seq_len / cp * micro) % (llm::kUserbufferPipelineSplits * tp) == 0;
                    // Megatron's rules: the parameter gather overlap needs the distributed
                    // optimizer and the overlapped gradient reduce, so it brings the latter.
                    layout.overlap_param_gather = limits.overlap_param_gather && zero > 0;
                    layout.overlap_grad_reduce =
                        limits.overlap_grad_reduce || layout.overlap_param_gather;
                    layout.fp8_param_gather = limits.fp8_param_gather && model.fp8() &&
                                              model.fp8_recipe != llm::Fp8Recipe::kBlockwise &&
                                              (zero == 1 || zero == 2);
                    layout.moe_a2a_overlap =
                        limits.moe_a2a_overlap && !llm::moe_a2a_overlap_problem(model, layout);
                    // Megatron's precondition: the delayed weight gradients run beside the
                    // combined step's all-to-alls.
                    layout.delay_wgrad_compute =
                        limits.delay_wgrad_compute && layout.moe_a2a_overlap;
                    layout.moe_flex_backend = limits.moe_flex_backend;
                    layout.moe_deepep_num_sms = limits.moe_deepep_num_sms;
                    layout.moe_hybridep_num_sms = limits.moe_hybridep_num_sms;
                    // Megatron's main-gradient dtype for the model's (fp16 keeps fp16).
                    layout.gradient_dtype = llm::main_gradient_dtype("auto", model, "--dtype");
                    const std::size_t first_of_layout = layouts.size();
                    for (const llm::RankOrder& order : limits.orders) {
                      layout.order = order;
                      // The EP group's nodes depend on the order: the dispatcher, and the
                      // shared experts' overlap that flex excludes, are chosen per order (its
                      // groups are only read for an order Megatron takes).
                      layout.moe_token_dispatcher =
                          limits.moe_token_dispatcher == llm::MoeTokenDispatcher::kFlex &&
                                  !llm::order_problem(layout) &&
                                  flex_dispatcher_allowed(model, layout, limits.gpus_per_node)
                              ? llm::MoeTokenDispatcher::kFlex
                              : llm::MoeTokenDispatcher::kAllToAll;
                      // Megatron-Core's rules (shared experts, EP > 1, alltoall, no a2a
                      // overlap), asked of the layout with the switch on.
                      layout.moe_shared_expert_overlap = limits.moe_shared_expert_overlap;
                      layout.moe_shared_expert_overlap =
                          layout.moe_shared_expert_overlap &&
                          !llm::shared_expert_overlap_problem(model, layout);
                      if (llm::order_problem(layout) ||
                          std::any_of(layouts.begin() + static_cast<long>(first_of_layout),
                                      layouts.end(), [&](const llm::ParallelConfig& placed) {
                                        return llm::same_rank_placement(placed, layout);
                                      }))
                        continue;
                      llm::validate(model, layout);  // the rules above are the generator's
                      layouts.push_back(layout);
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return layouts;
}

MemoryFilter keep_fitting(const llm::TransformerConfig& model,
                          const std::vector<llm::ParallelConfig>& layouts,
                          const memory::DeviceMemory& device) {
  MemoryFilter filter;
  for (const llm::ParallelConfig& layout : layouts) {
    memory::LlmMemoryEstimate estimate = memory::estimate_llm_memory(model, layout, device);
    if (estimate.verdict.fits)
      filter.fitting.push_back({layout, std::move(estimate)});
    else
      filter.not_fitting.push_back({layout, std::move(estimate)});
  }
  filter.out_of_memory = filter.not_fitting.size();
  return filter;
}

}  // namespace perfsim::planner
