#include "generators/llm/llm_parallel_config.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_set>

#include "generators/llm/llm_pipeline_split.hpp"
#include "generators/llm/llm_rank_mesh.hpp"
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
  if (parallel.etp < 0)
    throw InputError(kParallel, "etp", "must not be negative (0: ETP = TP)");
  if (!model.is_moe()) {
    if (parallel.etp > 0 && parallel.etp != parallel.tp)
      throw InputError(kParallel, "etp",
                       "an expert tensor-parallel size needs a mixture-of-experts model");
    if (parallel.ep > 1)
      throw InputError(kParallel, "ep",
                       "expert parallelism needs a mixture-of-experts model (num_experts)");
    return;
  }
  const MixtureOfExperts& moe = model.moe;
  require_divisible(moe.num_experts, parallel.ep, "ep", "num_experts");
  if (parallel.expert_tp() == parallel.tp)
    require_divisible(static_cast<long>(parallel.dp) * parallel.cp, parallel.ep, "ep",
                      "DP x CP (expert parallelism is carved out of the data-parallel ranks)");
  else  // parallel_state: the expert grid's ETP x EP x PP must divide the world
    require_divisible(static_cast<long>(parallel.tp) * parallel.cp * parallel.dp,
                      static_cast<long>(parallel.expert_tp()) * parallel.ep, "etp",
                      "TP x CP x DP (the expert layers' ETP x EP ranks tile them)");
  require_divisible(moe.expert_ffn_hidden, parallel.expert_tp(), "etp", "moe_ffn_hidden");
  require_divisible(moe.shared_expert_ffn_hidden, parallel.tp, "tp", "shared_expert_ffn_hidden");
  if (parallel.tp > 1 && !parallel.sequence_parallel)
    throw InputError(kParallel, "sequence_parallel",
                     "MoE layers with tensor parallelism need sequence parallelism (Megatron)");
  if (parallel.moe_pad_to_capacity && !(moe.capacity_factor > 0))
    throw InputError(kParallel, "moe_pad_expert_input_to_capacity",
                     "needs a capacity factor (the model's capacity_factor or "
                     "moe_expert_capacity_factor; Megatron asserts the same)");
  if (!parallel.moe_grouped_gemm && parallel.recomputes(&RecomputeModules::moe_act))
    throw InputError(kParallel, "recompute_modules",
                     "moe_act recomputes the grouped experts' activation (TEGroupedMLP); perfsim "
                     "does not model it with moe_grouped_gemm off (SequentialMLP)");
  if (parallel.moe_pad_to_capacity && parallel.moe_flex())
    throw InputError(kParallel, "moe_pad_expert_input_to_capacity",
                     "padding to capacity runs with the alltoall dispatcher only, not flex");
  const double max_imbalance = static_cast<double>(moe.num_experts) / moe.top_k;
  if (!(parallel.moe_imbalance >= 1.0) || parallel.moe_imbalance > max_imbalance)
    throw InputError(kParallel, "moe_imbalance",
                     "max / mean expert load must be between 1 and num_experts / top_k = " +
                         std::to_string(max_imbalance) + ", got " +
                         std::to_string(parallel.moe_imbalance));
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

std::string_view moe_token_dispatcher_name(MoeTokenDispatcher dispatcher) {
  return dispatcher == MoeTokenDispatcher::kFlex ? "flex" : "alltoall";
}

std::string_view moe_flex_backend_name(MoeFlexBackend backend) {
  return backend == MoeFlexBackend::kHybridEp ? "hybridep" : "deepep";
}

MoeTokenDispatcher parse_moe_token_dispatcher(std::string_view text, const std::string& flag) {
  if (text == "alltoall")
    return MoeTokenDispatcher::kAllToAll;
  if (text == "flex")
    return MoeTokenDispatcher::kFlex;
  throw InputError(flag, "",
                   "the MoE token dispatcher must be alltoall or flex, got \"" + std::string(text) +
                       "\" (allgather is not modelled)");
}

MoeFlexBackend parse_moe_flex_backend(std::string_view text, const std::string& flag) {
  if (text == "deepep")
    return MoeFlexBackend::kDeepEp;
  if (text == "hybridep")
    return MoeFlexBackend::kHybridEp;
  throw InputError(
      flag, "",
      "the flex dispatcher backend must be deepep or hybridep, got \"" + std::string(text) + "\"");
}

std::optional<std::string> order_problem(const ParallelConfig& parallel) {
  if (parallel.ep <= 0 || parallel.etp < 0 ||
      parallel.tp * parallel.dp * parallel.cp % (parallel.expert_tp() * parallel.ep) != 0)
    return std::nullopt;  // validate() names the expert-parallel problem
  const RankMesh attention = attention_mesh(parallel);
  const RankMesh experts = expert_mesh(parallel);
  const std::string order = "order " + rank_order_name(parallel.order);
  for (const RankMesh* mesh : {&attention, &experts})
    for (ParallelDimension dimension : default_rank_order())
      if (mesh->size(dimension) > 1 && std::find(parallel.order.begin(), parallel.order.end(),
                                                 dimension) == parallel.order.end())
        return order + " leaves out " + std::string(dimension_name(dimension)) + " of size " +
               std::to_string(mesh->size(dimension));
  const bool pipeline_last =
      !parallel.order.empty() && parallel.order.back() == ParallelDimension::kPipeline;
  if (!pipeline_last && parallel.pp > 1 && experts.size(ParallelDimension::kData) != parallel.dp)
    return order +
           " does not end with pp: Megatron then needs the expert layers' data parallel size "
           "(DP x CP / EP = " +
           std::to_string(experts.size(ParallelDimension::kData)) + ") to equal DP (" +
           std::to_string(parallel.dp) + ")";
  if (parallel.pp > 1 && attention.stride(ParallelDimension::kPipeline) !=
                             experts.stride(ParallelDimension::kPipeline))
    return order +
           " gives the expert layers other pipeline groups than the attention layers (Megatron "
           "requires them equal)";
  return std::nullopt;
}

RankCoordinates coordinates_of(const ParallelConfig& parallel, int rank) {
  const RankMesh mesh = attention_mesh(parallel);
  const RankMesh::Extents c = mesh.coordinates(rank);
  auto at = [&](ParallelDimension dimension) { return c[RankMesh::index(dimension)]; };
  return {.tp = at(ParallelDimension::kTensor),
          .dp = at(ParallelDimension::kData),
          .pp = at(ParallelDimension::kPipeline),
          .cp = at(ParallelDimension::kContext)};
}

ExpertCoordinates expert_coordinates_of(const ParallelConfig& parallel, int rank) {
  const RankMesh::Extents c = expert_mesh(parallel).coordinates(rank);
  return {c[RankMesh::index(ParallelDimension::kExpert)],
          c[RankMesh::index(ParallelDimension::kData)]};
}

int rank_of(const ParallelConfig& parallel, RankCoordinates coordinates) {
  RankMesh::Extents c{};
  c[RankMesh::index(ParallelDimension::kTensor)] = coordinates.tp;
  c[RankMesh::index(ParallelDimension::kContext)] = coordinates.cp;
  c[RankMesh::index(ParallelDimension::kData)] = coordinates.dp;
  c[RankMesh::index(ParallelDimension::kPipeline)] = coordinates.pp;
  return attention_mesh(parallel).rank(c);
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

std::optional<std::string> moe_a2a_overlap_problem(const TransformerConfig& model,
                                                   const ParallelConfig& parallel) {
  // Megatron-Core's asserts (TransformerConfig.__post_init__) first.
  if (!model.is_moe() || parallel.ep < 2)
    return "needs a mixture-of-experts model and EP > 1 (Megatron: only supported with expert "
           "model parallelism)";
  if (parallel.pp > 1 && parallel.virtual_stages < 2)
    return "with PP > 1 needs the interleaved schedule, virtual_stages > 1 (Megatron: "
           "virtual_pipeline_model_parallel_size must be specified)";
  if (parallel.recompute == Recompute::kFull)
    return "not with full recomputation (Megatron: disable full recomputation)";
  if (parallel.recomputes(&RecomputeModules::moe))
    return "not modelled with recompute module moe (the combined steps split the block)";
  if (model.dtype != DType::kBFloat16 && model.dtype != DType::kFloat16 && !model.fp8())
    return "needs a bf16 or fp16 model (Megatron), got " + std::string(dtype_name(model.dtype));
  if (model.mtp_num_layers > 1)
    return "supports at most one MTP layer (Megatron)";
  // Then what perfsim does not model with it.
  if (parallel.virtual_stages > 1 && !parallel.overlap_p2p_comm)
    return "not modelled with the batched interleaved exchange (overlap_p2p_comm off)";
  return std::nullopt;
}

namespace {

// Megatron-Core's checks of the flex dispatcher (token_dispatcher.py MoEFlexTokenDispatcher:
// "Flex token dispatcher requires TPxEP > 1"), then what perfsim does not model with it.
void validate_flex_dispatcher(const TransformerConfig& model, const ParallelConfig& parallel) {
  if (parallel.moe_deepep_num_sms <= 0)
    throw InputError(kParallel, "moe_deepep_num_sms", "must be positive");
  if (parallel.moe_hybridep_num_sms <= 0)
    throw InputError(kParallel, "moe_hybridep_num_sms", "must be positive");
  if (!parallel.moe_flex())
    return;
  if (!model.is_moe() || parallel.ep < 2)
    throw InputError(kParallel, "moe_token_dispatcher",
                     "flex needs a mixture-of-experts model and EP > 1 (Megatron: the flex "
                     "token dispatcher requires TPxEP > 1; perfsim models its EP group)");
  // The dispatch group would be ETP x EP with each expert's copies sent to its ETP ranks
  // (Megatron expands the routing map over expert TP): not modelled.
  if (parallel.expert_tp() > 1)
    throw InputError(kParallel, "moe_token_dispatcher",
                     "flex with expert tensor parallelism " + std::to_string(parallel.expert_tp()) +
                         " is not modelled (set etp 1)");
  if (parallel.ep_ranks_per_node > 0 && parallel.ep % parallel.ep_ranks_per_node != 0)
    throw InputError(kParallel, "moe_token_dispatcher",
                     "flex needs the same number of EP ranks on every node the EP group spans");
}

}  // namespace

void validate(const TransformerConfig& model, const ParallelConfig& parallel) {
  // The model first: a model built in code or from a table row reaches the generator without
  // the checks its file would have had, and a zero size would divide by zero below.
  validate(model, "<model " + model.name + ">");
  if (parallel.micro_batch < 0 || parallel.global_batch < 0)
    throw InputError(kParallel, parallel.micro_batch < 0 ? "micro_batch" : "global_batch",
                     "must not be negative (0: the model's)");
  if (parallel.tp <= 0 || parallel.pp <= 0 || parallel.dp <= 0 || parallel.cp <= 0 ||
      parallel.ep <= 0)
    throw InputError(kParallel, "tp/cp/ep/pp/dp", "every degree must be positive");
  validate_experts(model, parallel);
  if (parallel.moe_a2a_overlap)
    if (const std::optional<std::string> problem = moe_a2a_overlap_problem(model, parallel))
      throw InputError(kParallel, "moe_a2a_overlap", *problem);
  if (const std::optional<std::string> problem = delay_wgrad_compute_problem(parallel))
    throw InputError(kParallel, "delay_wgrad_compute", *problem);
  if (const std::optional<std::string> problem = shared_expert_overlap_problem(model, parallel))
    throw InputError(kParallel, "moe_shared_expert_overlap", *problem);
  if (const std::optional<std::string> problem = order_problem(parallel))
    throw InputError(kParallel, "order", *problem);
  validate_flex_dispatcher(model, parallel);
  if (!parallel.recompute_modules.is_default()) {
    // Megatron-Core reads recompute_modules only with --recompute-granularity selective, and
    // refuses moe_act without experts and mla_up_proj without multi-latent attention.
    if (parallel.recompute != Recompute::kSelective)
      throw InputError(kParallel, "recompute_modules",
                       "\"" + recompute_modules_name(parallel.recompute_modules) +
                           "\" needs recompute selective");
    if (parallel.recompute_modules.moe_act && !model.is_moe())
      throw InputError(kParallel, "recompute_modules", "moe_act needs a mixture-of-experts model");
    if (parallel.recompute_modules.mla_up_proj && !model.is_mla())
      throw InputError(kParallel, "recompute_modules", "mla_up_proj needs multi-latent attention");
  }
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
    // The ring's chunks would each see a different part of the band: not modelled.
    if (model.window_size > 0)
      throw InputError(kParallel, "cp",
                       "context parallelism with sliding-window attention (window_size) is not "
                       "modelled");
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
    // Megatron-LM's own checks (arguments.py): interleaving needs a pipeline, and with two
    // stages each batched exchange would hold two sends and two receives between the same two
    // ranks; with overlap_p2p_comm the transfers are separate and two stages are allowed.
    if (parallel.pp < 2)
      throw InputError(kParallel, "virtual_stages", "interleaving needs pipeline stages (PP > 1)");
    if (parallel.pp == 2 && !parallel.overlap_p2p_comm)
      throw InputError(kParallel, "virtual_stages",
                       "interleaving with two stages needs overlap_p2p_comm (Megatron-LM refuses "
                       "batched exchanges between the same two ranks)");
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
  if (model.is_mla()) {
    // What the multi-latent attention emitter (llm_mla_layer.cpp) does not model.
    const std::pair<bool, const char*> unsupported[] = {
        {parallel.tp_comm_overlap, "tp_comm_overlap"}, {parallel.zero_stage == 3, "zero"}};
    for (const auto& [set, field] : unsupported)
      if (set)
        throw InputError(kParallel, field,
                         "not modelled with multi-latent attention (userbuffers and ZeRO-3)");
  }
  if (model.mtp_num_layers > 0) {
    if (parallel.zero_stage == 3)
      throw InputError(kParallel, "zero", "ZeRO-3 is not modelled with multi-token prediction");
  }
  if (parallel.zero_stage < 0 || parallel.zero_stage > 3)
    throw InputError(kParallel, "zero",
                     "ZeRO stage must be 0..3, got " + std::to_string(parallel.zero_stage));
  // Megatron-LM's argument checks: the prefetched all-gather is the distributed optimizer's,
  // and its buckets are the gradient buffer's, dispatched by the overlapped reduce's hooks.
  if (parallel.overlap_param_gather && parallel.zero_stage == 0)
    throw InputError(
        kParallel, "overlap_param_gather",
        "needs the distributed optimizer (ZeRO 1/2; Megatron: \"--overlap-param-gather "
        "only supported with distributed optimizer\")");
  if (parallel.overlap_param_gather && !parallel.overlap_grad_reduce)
    throw InputError(kParallel, "overlap_param_gather",
                     "needs overlap_grad_reduce (Megatron: \"Must use --overlap-param-gather with "
                     "--overlap-grad-reduce\")");
  if (parallel.bucket_bytes < 0)
    throw InputError(kParallel, "bucket_bytes", "must not be negative (0: Megatron's default)");
  if (parallel.fp8_param_gather) {
    if (!model.fp8())
      throw InputError(kParallel, "fp8_param_gather", "FP8 primary weights need the FP8 recipe");
    if (model.fp8_recipe == Fp8Recipe::kBlockwise)
      throw InputError(kParallel, "fp8_param_gather",
                       "not modelled with blockwise scaling (delayed or current scaling only)");
    if (parallel.zero_stage != 1 && parallel.zero_stage != 2)
      throw InputError(kParallel, "fp8_param_gather",
                       "needs the distributed optimizer (ZeRO 1/2; Megatron-LM asserts it for "
                       "--fp8-param-gather; ZeRO-3 / FSDP is not modelled with it)");
  }
  const int micro = micro_batch_size(model, parallel);
  require_divisible(global_batch_size(model, parallel), static_cast<long>(micro) * parallel.dp,
                    "global_batch", "global batch");
}

namespace {

using Dim = ParallelDimension;

std::string group_name(const char* kind, const RankMesh& mesh, int rank,
                       RankMesh::Dimensions spanned) {
  return kind + std::to_string(mesh.group_index(rank, spanned));
}

}  // namespace

std::string tp_group_name(const ParallelConfig& parallel, int rank) {
  return group_name("tp/", attention_mesh(parallel), rank, {Dim::kTensor});
}

std::string dp_group_name(const ParallelConfig& parallel, int rank) {
  return group_name("dp/", attention_mesh(parallel), rank, {Dim::kData, Dim::kContext});
}

std::string pp_group_name(const ParallelConfig& parallel, int rank) {
  return group_name("pp/", attention_mesh(parallel), rank, {Dim::kPipeline});
}

std::string cp_group_name(const ParallelConfig& parallel, int rank) {
  return group_name("cp/", attention_mesh(parallel), rank, {Dim::kContext});
}

std::string ep_group_name(const ParallelConfig& parallel, int rank) {
  return group_name("ep/", expert_mesh(parallel), rank, {Dim::kExpert});
}

namespace {

// Whether the expert layers' TP groups hold the same ranks as the attention layers'.
bool expert_tp_is_tp(const ParallelConfig& parallel) {
  return parallel.expert_tp() == parallel.tp &&
         (parallel.tp == 1 || attention_mesh(parallel).stride(Dim::kTensor) ==
                                  expert_mesh(parallel).stride(Dim::kTensor));
}

// Whether the expert gradients' group is the DP x CP group: every expert on every rank of it.
bool expert_dp_is_dp(const ParallelConfig& parallel) {
  return parallel.ep <= 1 && expert_tp_is_tp(parallel);
}

}  // namespace

std::string expert_gradient_group_name(const ParallelConfig& parallel, int rank) {
  if (expert_dp_is_dp(parallel))
    return dp_group_name(parallel, rank);
  return group_name("edp/", expert_mesh(parallel), rank, {Dim::kData});
}

std::string expert_tp_group_name(const ParallelConfig& parallel, int rank) {
  if (expert_tp_is_tp(parallel))
    return tp_group_name(parallel, rank);
  return group_name("etp/", expert_mesh(parallel), rank, {Dim::kTensor});
}

bool expert_parameters_apart(const ParallelConfig& parallel) {
  return !expert_dp_is_dp(parallel);
}

std::string expert_model_parallel_group_name(const ParallelConfig& parallel, int rank) {
  return group_name("etpp/", expert_mesh(parallel), rank,
                    {Dim::kTensor, Dim::kExpert, Dim::kPipeline});
}

std::string model_parallel_group_name(const ParallelConfig& parallel, int rank) {
  return group_name("mp/", attention_mesh(parallel), rank, {Dim::kTensor, Dim::kPipeline});
}

std::string distributed_optimizer_group_name(const ParallelConfig& parallel, int rank) {
  return group_name("dopt/", attention_mesh(parallel), rank,
                    {Dim::kTensor, Dim::kContext, Dim::kData, Dim::kPipeline});
}

int gradient_norm_group_size(const ParallelConfig& parallel) {
  return parallel.zero_stage >= 1 ? parallel.world_size() : parallel.tp * parallel.pp;
}

std::string gradient_norm_group_name(const ParallelConfig& parallel, int rank) {
  return parallel.zero_stage >= 1 ? distributed_optimizer_group_name(parallel, rank)
                                  : model_parallel_group_name(parallel, rank);
}

std::string tp_cp_group_name(const ParallelConfig& parallel, int rank) {
  if (parallel.cp == 1)
    return tp_group_name(parallel, rank);
  if (parallel.tp == 1)
    return cp_group_name(parallel, rank);
  return group_name("tpcp/", attention_mesh(parallel), rank, {Dim::kTensor, Dim::kContext});
}

std::string tp_dp_cp_group_name(const ParallelConfig& parallel, int rank) {
  if (parallel.tp == 1)
    return dp_group_name(parallel, rank);
  if (parallel.dp * parallel.cp == 1)
    return tp_group_name(parallel, rank);
  return group_name("tpdp/", attention_mesh(parallel), rank,
                    {Dim::kTensor, Dim::kContext, Dim::kData});
}

std::string embedding_group_name(const ParallelConfig& parallel, int rank) {
  return group_name("emb/", attention_mesh(parallel), rank, {Dim::kPipeline});
}

namespace {

// process_groups_of without the job-wide group when `job_group` is false: all_process_groups
// adds that once instead of building its member list for every rank (16,384 ranks squared).
std::vector<ProcessGroup> groups_of(const ParallelConfig& parallel, int rank, bool job_group) {
  const RankMesh mesh = attention_mesh(parallel);
  std::vector<ProcessGroup> groups{
      make_group(tp_group_name(parallel, rank), mesh.group_ranks(rank, {Dim::kTensor}),
                 "tensor parallel"),
      make_group(dp_group_name(parallel, rank), mesh.group_ranks(rank, {Dim::kData, Dim::kContext}),
                 parallel.cp > 1 ? "data parallel x context parallel" : "data parallel"),
      make_group(pp_group_name(parallel, rank), mesh.group_ranks(rank, {Dim::kPipeline}),
                 "pipeline parallel")};
  if (parallel.cp > 1)
    groups.push_back(make_group(cp_group_name(parallel, rank),
                                mesh.group_ranks(rank, {Dim::kContext}), "context parallel"));
  if (parallel.cp > 1 && parallel.tp > 1)
    groups.push_back(make_group(tp_cp_group_name(parallel, rank),
                                mesh.group_ranks(rank, {Dim::kTensor, Dim::kContext}),
                                "tensor x context parallel (MoE router)"));
  const RankMesh experts = expert_mesh(parallel);
  if (parallel.ep > 1)
    groups.push_back(make_group(ep_group_name(parallel, rank),
                                experts.group_ranks(rank, {Dim::kExpert}), "expert parallel"));
  if (!expert_dp_is_dp(parallel))
    groups.push_back(make_group(expert_gradient_group_name(parallel, rank),
                                experts.group_ranks(rank, {Dim::kData}), "expert data parallel"));
  if (!expert_tp_is_tp(parallel) && parallel.expert_tp() > 1)
    groups.push_back(make_group(expert_tp_group_name(parallel, rank),
                                experts.group_ranks(rank, {Dim::kTensor}),
                                "expert tensor parallel"));
  if (expert_parameters_apart(parallel) && parallel.expert_tp() * parallel.ep * parallel.pp > 1)
    groups.push_back(
        make_group(expert_model_parallel_group_name(parallel, rank),
                   experts.group_ranks(rank, {Dim::kTensor, Dim::kExpert, Dim::kPipeline}),
                   "expert tensor x expert x pipeline parallel (gradient norm)"));
  if (gradient_norm_group_size(parallel) > 1 && parallel.zero_stage == 0)
    groups.push_back(make_group(gradient_norm_group_name(parallel, rank),
                                mesh.group_ranks(rank, {Dim::kTensor, Dim::kPipeline}),
                                "tensor x pipeline parallel (gradient norm)"));
  if (gradient_norm_group_size(parallel) > 1 && parallel.zero_stage >= 1 && job_group) {
    std::vector<int> job(static_cast<std::size_t>(parallel.world_size()));
    std::iota(job.begin(), job.end(), 0);  // every rank, ascending: no mesh walk, no sort
    groups.push_back(make_group(gradient_norm_group_name(parallel, rank), std::move(job),
                                "distributed-optimizer instance: the job (gradient norm)"));
  }
  if (const RankCoordinates c = coordinates_of(parallel, rank);
      parallel.pp > 1 && (c.pp == 0 || c.pp == parallel.pp - 1))
    groups.push_back(make_group(embedding_group_name(parallel, rank),
                                {rank_of(parallel, {c.tp, c.dp, 0, c.cp}),
                                 rank_of(parallel, {c.tp, c.dp, parallel.pp - 1, c.cp})},
                                "embedding group: first and last pipeline stage (the gradient "
                                "of an embedding held on both)"));
  // Listed last: FP8 delayed scaling's amax reductions and a router's expert-bias update use it.
  if (parallel.tp > 1 && parallel.dp * parallel.cp > 1)
    groups.push_back(
        make_group(tp_dp_cp_group_name(parallel, rank),
                   mesh.group_ranks(rank, {Dim::kTensor, Dim::kContext, Dim::kData}),
                   "tensor x data x context parallel (FP8 amax reduction, MoE router's expert "
                   "bias)"));
  return groups;
}

}  // namespace

std::vector<ProcessGroup> process_groups_of(const ParallelConfig& parallel, int rank) {
  return groups_of(parallel, rank, true);
}

std::vector<ProcessGroup> all_process_groups(const ParallelConfig& parallel) {
  std::vector<ProcessGroup> groups;
  std::unordered_set<std::string> seen;  // tens of thousands of groups at 16k GPUs
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    for (ProcessGroup& group : groups_of(parallel, rank, rank == 0)) {
      if (!seen.insert(group.name).second)
        continue;
      groups.push_back(std::move(group));
    }
  }
  return groups;
}

}  // namespace perfsim::generators::llm
