#include "generators/llm/llm_parallel_config.hpp"

#include <algorithm>
#include <unordered_set>

#include "generators/llm/llm_pipeline_split.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

const char* kParallel = "<parallel>";

void require_divisible(long value, long divisor, const std::string& field,
                       const std::string& what) {
  if (divisor <= 0 || value % divisor != 0)
    throw InputError(
        kParallel, field,
        what + " " + std::to_string(value) + " is not divisible by " + std::to_string(divisor));
}

ProcessGroup make_group(std::string name, std::vector<int> ranks, std::string description) {
  return {std::move(name), std::move(ranks), std::move(description)};
}

// Megatron's rules for the MoE layers (arguments.py, the expert mesh of parallel_state.py).
void validate_experts(const TransformerConfig& model, const ParallelConfig& parallel) {
  if (!model.is_moe()) {
    if (parallel.ep > 1)
      throw InputError(kParallel, "ep",
                       "expert parallelism needs a mixture-of-experts model (num_experts)");
    return;
  }
  const MixtureOfExperts& moe = model.moe;
  require_divisible(moe.num_experts, parallel.ep, "ep", "num_experts");
  require_divisible(static_cast<long>(parallel.dp) * parallel.cp, parallel.ep, "ep",
                    "DP x CP (expert parallelism is carved out of the data-parallel ranks)");
  require_divisible(moe.expert_ffn_hidden, parallel.tp, "tp", "moe_ffn_hidden");
  require_divisible(moe.shared_expert_ffn_hidden, parallel.tp, "tp", "shared_expert_ffn_hidden");
  if (parallel.tp > 1 && !parallel.sequence_parallel)
    throw InputError(kParallel, "sequence_parallel",
                     "MoE layers with tensor parallelism need sequence parallelism (Megatron)");
  const double max_imbalance = static_cast<double>(moe.num_experts) / moe.top_k;
  if (!(parallel.moe_imbalance >= 1.0) || parallel.moe_imbalance > max_imbalance)
    throw InputError(kParallel, "moe_imbalance",
                     "max / mean expert load must be between 1 and num_experts / top_k = " +
                         std::to_string(max_imbalance) + ", got " +
                         std::to_string(parallel.moe_imbalance));
  if (parallel.zero_stage == 3)
    throw InputError(kParallel, "zero", "ZeRO 3 is not modelled for MoE layers");
  if (parallel.overlap_param_gather)
    throw InputError(kParallel, "overlap_param_gather", "not modelled for MoE layers");
}

}  // namespace

std::string_view recompute_name(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "none";
}

Recompute parse_recompute(std::string_view text, const std::string& flag) {
  if (text == "none")
    return Recompute::kNone;
  if (text == "selective")
    return Recompute::kSelective;
  if (text == "full")
    return Recompute::kFull;
  throw InputError(flag, "",
                   "recompute must be none, selective or full, got \"" + std::string(text) + "\"");
}

RankCoordinates coordinates_of(const ParallelConfig& parallel, int rank) {
  RankCoordinates coordinates;
  coordinates.tp = rank % parallel.tp;
  coordinates.cp = (rank / parallel.tp) % parallel.cp;
  coordinates.dp = (rank / (parallel.tp * parallel.cp)) % parallel.dp;
  coordinates.pp = rank / (parallel.tp * parallel.cp * parallel.dp);
  return coordinates;
}

ExpertCoordinates expert_coordinates_of(const ParallelConfig& parallel, int rank) {
  const RankCoordinates c = coordinates_of(parallel, rank);
  const int data_index = c.cp + parallel.cp * c.dp;
  const int ep = std::max(1, parallel.ep);
  return {data_index % ep, data_index / ep};
}

int rank_of(const ParallelConfig& parallel, RankCoordinates coordinates) {
  return coordinates.tp +
         parallel.tp *
             (coordinates.cp + parallel.cp * (coordinates.dp + parallel.dp * coordinates.pp));
}

int micro_batch_size(const TransformerConfig& model, const ParallelConfig& parallel) {
  return parallel.micro_batch > 0 ? parallel.micro_batch : model.micro_batch;
}

int global_batch_size(const TransformerConfig& model, const ParallelConfig& parallel) {
  return parallel.global_batch > 0 ? parallel.global_batch : model.global_batch;
}

int micro_batches_per_iteration(const TransformerConfig& model, const ParallelConfig& parallel) {
  return global_batch_size(model, parallel) / (micro_batch_size(model, parallel) * parallel.dp);
}

int layers_of_stage(const TransformerConfig& model, const ParallelConfig& parallel, int stage) {
  const std::vector<int> chunks = virtual_stage_layers(model, parallel);
  int layers = 0;
  for (int chunk = 0; chunk < parallel.virtual_stages; ++chunk)
    layers += chunks.at(static_cast<std::size_t>(chunk * parallel.pp + stage));
  return layers;
}

long padded_vocab(const TransformerConfig& model, const ParallelConfig& parallel) {
  const long multiple =
      static_cast<long>(std::max(1, parallel.vocab_divisible_by)) * std::max(1, parallel.tp);
  return (model.vocab + multiple - 1) / multiple * multiple;
}

void validate(const TransformerConfig& model, const ParallelConfig& parallel) {
  if (parallel.tp <= 0 || parallel.pp <= 0 || parallel.dp <= 0 || parallel.cp <= 0 ||
      parallel.ep <= 0)
    throw InputError(kParallel, "tp/cp/ep/pp/dp", "every degree must be positive");
  validate_experts(model, parallel);
  // Ops one simulated rank holds: about 200 per layer and micro-batch (forward, recomputation
  // and backward kernels and collectives). Past a few hundred million the run cannot fit in
  // memory; say so with the estimate instead of generating for hours.
  const double micro_batches = static_cast<double>(global_batch_size(model, parallel)) /
                               std::max(1, micro_batch_size(model, parallel)) /
                               std::max(1, parallel.dp);
  const double ops_per_rank = 200.0 * model.layers / parallel.pp * micro_batches;
  constexpr double kMaxOpsPerRank = 5e8;
  if (ops_per_rank > kMaxOpsPerRank)
    throw InputError(
        kParallel, "layers x micro-batches",
        "about " + std::to_string(static_cast<long long>(ops_per_rank)) +
            " ops per simulated rank (" + std::to_string(model.layers / parallel.pp) +
            " layers per stage x " + std::to_string(static_cast<long long>(micro_batches)) +
            " micro-batches), above the " + std::to_string(static_cast<long long>(kMaxOpsPerRank)) +
            " a run can hold (about 1 kB each)");
  if (parallel.cp > 1) {
    // Megatron splits each sequence into 2 x CP chunks and gives rank i chunks i and 2CP-1-i.
    require_divisible(model.seq_len, 2L * parallel.cp, "cp", "seq_len (2 x CP chunks)");
    if (model.attention != AttentionKernel::kFlash)
      throw InputError(kParallel, "cp", "context parallelism needs flash attention");
  }
  require_divisible(model.heads, parallel.tp, "tp", "heads");
  if (model.kv_heads % parallel.tp != 0 && parallel.tp % model.kv_heads != 0)
    throw InputError(kParallel, "tp",
                     "kv_heads " + std::to_string(model.kv_heads) + " and TP " +
                         std::to_string(parallel.tp) + ": one must divide the other");
  require_divisible(model.ffn_hidden, parallel.tp, "tp", "ffn_hidden");
  if (parallel.vocab_divisible_by <= 0)
    throw InputError(kParallel, "make_vocab_size_divisible_by", "must be positive");
  if (parallel.virtual_stages <= 0)
    throw InputError(kParallel, "virtual_stages", "must be positive");
  virtual_stage_layers(model, parallel);  // throws when the layers do not split so
  if (parallel.virtual_stages > 1) {
    // With two stages the ring's wrap-around link is the same rank pair as the backward link,
    // and the engine pairs point-to-point messages by rank pair and order only.
    if (parallel.pp < 3)
      throw InputError(kParallel, "virtual_stages", "interleaving needs at least three stages");
    require_divisible(micro_batches_per_iteration(model, parallel), parallel.pp, "virtual_stages",
                      "micro-batches per iteration (interleaved schedule)");
  }
  if (parallel.sequence_parallel)
    require_divisible(model.seq_len / parallel.cp, parallel.tp, "sequence_parallel",
                      "seq_len / CP");
  if (parallel.tp_comm_overlap) {
    // TE initialize_ub: userbuffers exist for sequence-parallel TP only; the pipelined
    // reduce-scatter splits the tokens into chunks, each reduce-scattered over TP.
    if (parallel.tp < 2 || !parallel.sequence_parallel)
      throw InputError(kParallel, "tp_comm_overlap", "needs TP > 1 and sequence parallelism");
    require_divisible(model.seq_len / parallel.cp * micro_batch_size(model, parallel),
                      static_cast<long>(kUserbufferPipelineSplits) * parallel.tp, "tp_comm_overlap",
                      "tokens per micro-batch (seq_len / CP x micro-batch) in " +
                          std::to_string(kUserbufferPipelineSplits) + " x TP chunks");
  }
  if (parallel.zero_stage < 0 || parallel.zero_stage > 3)
    throw InputError(kParallel, "zero",
                     "ZeRO stage must be 0..3, got " + std::to_string(parallel.zero_stage));
  if (parallel.bucket_bytes < 0)
    throw InputError(kParallel, "bucket_bytes", "must be positive (0: Megatron's default)");
  const int micro = micro_batch_size(model, parallel);
  require_divisible(global_batch_size(model, parallel), static_cast<long>(micro) * parallel.dp,
                    "global_batch", "global batch");
}

std::string tp_group_name(const ParallelConfig& parallel, int rank) {
  return "tp/" + std::to_string(rank / parallel.tp);
}

std::string dp_group_name(const ParallelConfig& parallel, int rank) {
  const RankCoordinates c = coordinates_of(parallel, rank);
  return "dp/" + std::to_string(c.tp + parallel.tp * c.pp);
}

std::string pp_group_name(const ParallelConfig& parallel, int rank) {
  const RankCoordinates c = coordinates_of(parallel, rank);
  return "pp/" + std::to_string(c.tp + parallel.tp * (c.cp + parallel.cp * c.dp));
}

std::string cp_group_name(const ParallelConfig& parallel, int rank) {
  const RankCoordinates c = coordinates_of(parallel, rank);
  return "cp/" + std::to_string(c.tp + parallel.tp * (c.dp + parallel.dp * c.pp));
}

std::string ep_group_name(const ParallelConfig& parallel, int rank) {
  const RankCoordinates c = coordinates_of(parallel, rank);
  const int expert_dp = parallel.expert_gradient_group_size();
  return "ep/" + std::to_string(c.tp + parallel.tp * (expert_coordinates_of(parallel, rank).edp +
                                                      expert_dp * c.pp));
}

std::string expert_gradient_group_name(const ParallelConfig& parallel, int rank) {
  if (parallel.ep <= 1)
    return dp_group_name(parallel, rank);
  const RankCoordinates c = coordinates_of(parallel, rank);
  return "edp/" + std::to_string(c.tp + parallel.tp * (expert_coordinates_of(parallel, rank).ep +
                                                       parallel.ep * c.pp));
}

std::vector<ProcessGroup> process_groups_of(const ParallelConfig& parallel, int rank) {
  const RankCoordinates c = coordinates_of(parallel, rank);
  std::vector<int> tp, dp, pp, cp;
  for (int i = 0; i < parallel.tp; ++i)
    tp.push_back(rank_of(parallel, {i, c.dp, c.pp, c.cp}));
  for (int i = 0; i < parallel.dp; ++i)
    for (int j = 0; j < parallel.cp; ++j)
      dp.push_back(rank_of(parallel, {c.tp, i, c.pp, j}));
  std::sort(dp.begin(), dp.end());
  for (int i = 0; i < parallel.pp; ++i)
    pp.push_back(rank_of(parallel, {c.tp, c.dp, i, c.cp}));
  for (int i = 0; i < parallel.cp; ++i)
    cp.push_back(rank_of(parallel, {c.tp, c.dp, c.pp, i}));
  std::vector<ProcessGroup> groups{
      make_group(tp_group_name(parallel, rank), std::move(tp), "tensor parallel"),
      make_group(dp_group_name(parallel, rank), std::move(dp),
                 parallel.cp > 1 ? "data parallel x context parallel" : "data parallel"),
      make_group(pp_group_name(parallel, rank), std::move(pp), "pipeline parallel")};
  if (parallel.cp > 1)
    groups.push_back(make_group(cp_group_name(parallel, rank), std::move(cp), "context parallel"));
  if (parallel.ep > 1) {
    // Members by their index d = cp + CP x dp in the DP x CP ranks of this TP and PP rank.
    auto rank_at = [&](int data_index) {
      return rank_of(parallel, {c.tp, data_index / parallel.cp, c.pp, data_index % parallel.cp});
    };
    const ExpertCoordinates e = expert_coordinates_of(parallel, rank);
    std::vector<int> ep, edp;
    for (int i = 0; i < parallel.ep; ++i)
      ep.push_back(rank_at(i + parallel.ep * e.edp));
    for (int i = 0; i < parallel.expert_gradient_group_size(); ++i)
      edp.push_back(rank_at(e.ep + parallel.ep * i));
    std::sort(ep.begin(), ep.end());
    std::sort(edp.begin(), edp.end());
    groups.push_back(make_group(ep_group_name(parallel, rank), std::move(ep), "expert parallel"));
    groups.push_back(make_group(expert_gradient_group_name(parallel, rank), std::move(edp),
                                "expert data parallel"));
  }
  return groups;
}

std::vector<ProcessGroup> all_process_groups(const ParallelConfig& parallel) {
  std::vector<ProcessGroup> groups;
  std::unordered_set<std::string> seen;  // tens of thousands of groups at 16k GPUs
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    for (ProcessGroup& group : process_groups_of(parallel, rank)) {
      if (!seen.insert(group.name).second)
        continue;
      groups.push_back(std::move(group));
    }
  }
  return groups;
}

}  // namespace perfsim::generators::llm
