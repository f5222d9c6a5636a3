#include "generators/llm/llm_rank_generator.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "generators/llm/llm_combined_step.hpp"
#include "generators/llm/llm_layer_emitter.hpp"
#include "generators/llm/llm_local_shapes.hpp"
#include "generators/llm/llm_pipeline_schedule.hpp"
#include "generators/llm/llm_pipeline_split.hpp"
#include "generators/llm/llm_rank_roles.hpp"
#include "generators/llm/llm_te_workspace.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "generators/llm/llm_userbuffers.hpp"
#include "kernels/ceil_div.hpp"
#include "kernels/comm_hbm_traffic.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

using kernels::ceil_div;

ContextParallelRing context_ring(const ParallelConfig& parallel, int rank) {
  const RankCoordinates c = coordinates_of(parallel, rank);
  RankCoordinates next = c, previous = c;
  next.cp = (c.cp + 1) % parallel.cp;
  previous.cp = (c.cp + parallel.cp - 1) % parallel.cp;
  return {parallel.cp, rank_of(parallel, next), rank_of(parallel, previous)};
}

// One pipeline stage on one rank: its layers, its weights, its data-parallel state.
class StageGenerator {
 public:
  // The rank is known only through `roles` (placeholders when generating a stage template).
  StageGenerator(const TransformerConfig& model, const ParallelConfig& parallel,
                 const RankRoles& roles, RankTraceBuilder& builder)
      : model_(model),
        parallel_(parallel),
        roles_(roles),
        shapes_(local_shapes(model, parallel)),
        builder_(builder),
        emitter_(shapes_, model, parallel.recompute,
                 {parallel.overlap_tp_backward, parallel.comm_sms, parallel.tp_comm_overlap},
                 {roles.tp_group, parallel.tp, roles.tensor_next, roles.tensor_previous},
                 {parallel.cp, roles.context_next, roles.context_previous},
                 {roles.ep_group, parallel.ep, roles.expert_tp_group, parallel.expert_tp(),
                  roles.tp_cp_group, parallel.tp * parallel.cp},
                 builder),
        dp_group_(roles.dp_group),
        micro_batches_(micro_batches_per_iteration(model, parallel)) {
    emitter_.set_comm_bus_rates(parallel.bus_rates.tp_GBps, parallel.bus_rates.cp_GBps);
    emitter_.set_recompute_modules(parallel.recompute_modules);
    emitter_.set_moe_switches({.router_fusion = parallel.moe_router_fusion,
                               .permute_fusion = parallel.moe_permute_fusion,
                               .force_load_balancing = parallel.moe_router_force_load_balancing,
                               .router_fp32 = parallel.moe_router_fp32,
                               .flex = parallel.moe_flex(),
                               .hybridep = parallel.moe_flex_backend == MoeFlexBackend::kHybridEp,
                               .pad_to_capacity = parallel.moe_pad_to_capacity,
                               .grouped_gemm = parallel.moe_grouped_gemm});
    emitter_.set_delay_wgrad_compute(parallel.delay_wgrad_compute);
    emitter_.set_shared_expert_overlap(
        parallel.moe_shared_expert_overlap, parallel.comm_sms,
        kernels::hbm_bytes_per_bus_byte(CollectiveKind::kAllToAllv,
                                        kernels::CommDataPath::kNcclStaged) *
            parallel.bus_rates.ep_GBps);
    expert_buffer_.group = roles.expert_dp_group;
    expert_buffer_.size = parallel.expert_gradient_group_size();
    for (int chunk = 0; chunk < parallel.virtual_stages; ++chunk) {
      chunks_.push_back(stage_layers(model, parallel, roles_.stage, chunk));
      for (int layer = chunks_.back().first; layer < chunks_.back().last; ++layer)
        weights_[layer] = emitter_.make_weights(model.is_moe_layer(layer));
    }
    embedding_weight_ = builder_.tensor({shapes_.vocab_local, shapes_.hidden});
    head_weight_ = builder_.tensor({shapes_.hidden, shapes_.vocab_local});
    if (last_stage()) {
      // Multi-token prediction lives on the last stage (Megatron-Core's mtp_process), each
      // module's layer like the model's last; with PP > 1 the stage holds its own copy of the
      // word embedding (its gradient all-reduced with the first stage's, not modelled).
      for (int module = 0; module < model.mtp_num_layers; ++module)
        mtp_weights_.push_back(emitter_.make_mtp_weights(model.is_moe_layer(model.layers - 1)));
      if (model.mtp_num_layers > 0 && !first_stage())
        mtp_embedding_weight_ = builder_.tensor({shapes_.vocab_local, shapes_.hidden});
    }
    stage_fp8_gemms_ = count_stage_fp8_gemms();
    place_persistent_state();
  }

  // Megatron keeps a stage's parameters and its gradients in contiguous buffers (the gradient
  // buckets and, with the distributed optimizer, the shards are views of them); Transformer
  // Engine keeps each linear weight's FP8 copy and transpose as module buffers. They, and the
  // Adam state, live across iterations: the trace declares them (declare_persistent_state).
  void place_persistent_state() {
    const DType dtype = model_.activation_dtype();
    parameters_ = builder_.tensor({0}, dtype);
    // FP8 primary weights: Megatron's DDP keeps one buffer per parameter dtype; the linear
    // weights (E4M3, LayerEmitter::linear_weight) fill a uint8 buffer of their own.
    if (shapes_.fp8_params)
      fp8_parameters_ = builder_.tensor({0}, DType::kFloat8);
    std::int64_t offset = 0, fp8_parameter_offset = 0;
    auto place = [&](TensorRef& weight) {
      const bool fp8 = shapes_.fp8_params && weight.dtype == DType::kFloat8;
      std::int64_t& next = fp8 ? fp8_parameter_offset : offset;
      weight.storage_id = fp8 ? fp8_parameters_.storage_id : parameters_.storage_id;
      weight.offset_elements = next;
      next += weight.numel;
    };
    auto place_layer = [&](LayerWeights& weights) {
      if (weights.mla) {
        if (shapes_.q_lora_rank > 0)
          place(weights.q_down);
        for (TensorRef* weight : {&weights.q_up, &weights.kv_down, &weights.kv_up})
          place(*weight);
        offset += shapes_.q_lora_rank + shapes_.kv_lora_rank;  // the latent norms
      } else {
        place(weights.qkv);
      }
      for (TensorRef* weight : {&weights.proj, &weights.fc1, &weights.fc2})
        place(*weight);
      if (weights.moe) {
        for (TensorRef* weight : {&weights.router, &weights.expert_fc1, &weights.expert_fc2})
          place(*weight);
      }
      offset += 2 * shapes_.hidden;  // the two norms
    };
    for (auto& [layer, weights] : weights_) {
      layer_shard_offset_[layer] = offset;
      if (zero3()) {  // only this rank's shard persists; gather_layer makes the rest
        offset += zero3_dense_shard(weights) + zero3_expert_shard(weights);
        continue;
      }
      place_layer(weights);
    }
    if (first_stage())
      place(embedding_weight_);
    if (last_stage()) {
      if (head_parameters() > 0) {
        place(head_weight_);
      } else {  // the output layer reads the tied embedding's storage
        head_weight_.storage_id = embedding_weight_.storage_id;
        head_weight_.offset_elements = embedding_weight_.offset_elements;
      }
      offset += shapes_.hidden;  // the final norm
    }
    for (MtpWeights& module : mtp_weights_) {
      place_layer(module.layer);
      place(module.eh_proj);
      offset += 3 * shapes_.hidden;  // enorm, hnorm, the layer's final norm
    }
    if (mtp_embedding_weight_.numel > 0)
      place(mtp_embedding_weight_);
    set_elements(parameters_, offset);
    if (shapes_.fp8_params)
      set_elements(fp8_parameters_, fp8_parameter_offset);

    if (shapes_.fp8_linear && !zero3()) {
      fp8_weights_ = builder_.tensor({0}, DType::kFloat8);
      std::int64_t fp8_offset = 0;
      for (auto& [layer, weights] : weights_)
        fp8_offset = emitter_.place_fp8_copies(weights, fp8_weights_, fp8_offset);
      for (MtpWeights& module : mtp_weights_)
        fp8_offset = emitter_.place_mtp_fp8_copies(module, fp8_weights_, fp8_offset);
      set_elements(fp8_weights_, fp8_offset);
    }
    // ZeRO 2 and 3 keep the gradient shard only; ZeRO 0 and 1 the stage's gradients.
    const std::int64_t gradient_elements = parallel_.zero_stage >= 2 && dp_size() > 1
                                               ? optimizer_elements()
                                               : stage_parameters() + stage_expert_parameters();
    gradients_ = builder_.tensor({gradient_elements}, parallel_.gradient_dtype);
  }

  static void set_elements(TensorRef& flat, std::int64_t elements) {
    flat.shape = {elements};
    flat.numel = elements;
  }

  // The stage's persistent memory as annotations at the end of the trace (memory replay only).
  void declare_persistent_state() {
    std::vector<TensorRef> parameters{parameters_};
    if (fp8_parameters_.numel > 0)
      parameters.push_back(fp8_parameters_);
    if (fp8_weights_.numel > 0)
      parameters.push_back(fp8_weights_);
    builder_.declare_persistent("parameters", std::move(parameters));
    builder_.declare_persistent("gradients", {gradients_});
    builder_.declare_persistent("optimizer state", optimizer_state_);
    // Transformer Engine's userbuffers, registered once per process outside the caching
    // allocator (llm_userbuffers.hpp).
    std::vector<TensorRef> buffers;
    for (const Userbuffer& buffer : userbuffers(model_, parallel_))
      buffers.push_back(builder_.tensor({buffer.rows, buffer.hidden}, buffer.dtype));
    builder_.declare_persistent("communication buffers", std::move(buffers));
    // Transformer Engine's cuBLAS workspaces, allocated once per process (llm_te_workspace.hpp).
    std::vector<TensorRef> workspaces;
    for (const Bytes bytes :
         te_cublas_workspaces(model_, parallel_, parallel_.cublas_workspace_bytes))
      workspaces.push_back(builder_.tensor({bytes}, DType::kUInt8));
    if (!workspaces.empty())
      builder_.declare_persistent("workspace", std::move(workspaces));
  }

  bool first_stage() const { return roles_.stage == 0; }
  bool last_stage() const { return roles_.stage == parallel_.pp - 1; }
  // The first and last virtual stages hold the embedding and the LM head.
  bool first_virtual(int chunk) const { return first_stage() && chunk == 0; }
  bool last_virtual(int chunk) const {
    return last_stage() && chunk == parallel_.virtual_stages - 1;
  }
  // Neighbours in the pipeline ring: the last stage's chunk c feeds stage 0's chunk c + 1.
  int previous_rank() const { return roles_.pipeline_previous; }
  int next_rank() const { return roles_.pipeline_next; }
  // What crosses a stage boundary: the [seq_local, b, h] activation (its gradient backward),
  // or with Megatron-LM's scatter/gather (ParallelConfig::p2p_scatter_gather) this TP rank's
  // 1/TP slice of it, all-gathered over the TP group by the receiver before use.
  std::int64_t boundary_elements() const {
    return shapes_.seq_local * shapes_.batch * shapes_.hidden;
  }
  bool scatters_boundary() const {
    return parallel_.p2p_scatter_gather && parallel_.tp > 1 && !shapes_.sequence_parallel &&
           boundary_elements() % parallel_.tp == 0;
  }
  TensorRef stage_boundary_tensor() {
    if (scatters_boundary())
      return builder_.tensor({boundary_elements() / parallel_.tp});
    return builder_.tensor({shapes_.seq_local, shapes_.batch, shapes_.hidden});
  }
  // The part of `full` this rank sends (split_tensor_into_1d_equal_chunks: a view, no copy).
  TensorRef boundary_to_send(const TensorRef& full) const {
    if (!scatters_boundary())
      return full;
    return RankTraceBuilder::view(full, {boundary_elements() / parallel_.tp});
  }
  // The received tensor as the step reads it (gather_split_1d_tensor: an all-gather into a
  // new [seq_local, b, h] tensor).
  TensorRef gather_boundary(const TensorRef& received) {
    if (!scatters_boundary())
      return received;
    TensorRef full = builder_.tensor({shapes_.seq_local, shapes_.batch, shapes_.hidden});
    builder_.communicate(
        {CollectiveKind::kAllGather, roles_.tp_group, parallel_.tp, -1, kTensorParallelStream},
        received, full);
    return full;
  }

  TensorRef forward(int chunk, int micro_batch, const std::optional<TensorRef>& input) {
    const LayerRange layers = chunks_.at(static_cast<std::size_t>(chunk));
    builder_.set_context("forward", micro_batch, -1);
    if (parallel_.timer_syncs)  // timers('forward-compute').start()
      builder_.synchronize_device();
    if (chunk == 0 && (first_stage() || last_stage()))
      builder_.load_batch(parallel_.batch_load_sync);
    TensorRef x = input ? *input : emitter_.embedding_forward(embedding_weight_);
    if (zero3() && layers.first < layers.last)  // a chunk may hold only the embedding
      gather_layer(layers.first);
    for (int layer = layers.first; layer < layers.last; ++layer) {
      builder_.set_layer(layer);
      if (zero3() && layer + 1 < layers.last)
        gather_layer(layer + 1);
      // With overlap_param_gather the first forward reads the freshly gathered parameters and
      // runs beside the all-gathers still in flight.
      const bool first_use = micro_batch == 0 && first_use_parameters_.count(layer) > 0;
      const LayerWeights weights = first_use ? gathered_for_first_use(layer) : layer_weights(layer);
      ContentionScope beside(builder_, first_use ? parallel_.comm_sms : 0,
                             first_use ? dp_hbm_GBps(CollectiveKind::kAllGather) : 0);
      // FP8 weight copies are made once per iteration (ZeRO-3 gathers them every time).
      if (zero3() || (micro_batch == 0 && !parallel_.layer_probe))
        emitter_.cast_weights_to_fp8(weights);
      ForwardSaved saved = emitter_.forward(x, weights);
      x = saved.output;
      saved_[{layer, micro_batch}] = std::move(saved);
    }
    reduce_delayed_amaxes(true);
    builder_.set_layer(-1);
    if (last_virtual(chunk)) {
      TensorRef hidden = x;
      for (std::size_t module = 0; module < mtp_weights_.size(); ++module) {
        builder_.set_layer(model_.layers + static_cast<int>(module));
        if (micro_batch == 0)
          emitter_.cast_mtp_weights_to_fp8(mtp_weights_[module]);
        MtpSaved saved =
            emitter_.mtp_forward(hidden, mtp_embedding(), head_weight_, mtp_weights_[module]);
        reduce_mtp_amaxes(true);
        hidden = saved.output;
        mtp_saved_[{static_cast<int>(module), micro_batch}] = std::move(saved);
      }
      builder_.set_layer(-1);
      head_saved_[micro_batch] = emitter_.head_forward(x, head_weight_);
    }
    if (parallel_.timer_syncs)  // timers('forward-compute').stop(), after the loss
      builder_.synchronize_device();
    return x;
  }

  TensorRef backward(int chunk, int micro_batch, const std::optional<TensorRef>& grad_output) {
    const LayerRange layers = chunks_.at(static_cast<std::size_t>(chunk));
    builder_.set_context("backward", micro_batch, -1);
    if (parallel_.timer_syncs)  // timers('backward-compute').start()
      builder_.synchronize_device();
    // Each chunk's gradients are complete after its backward of the last micro-batch.
    const bool reduce_now = micro_batch == micro_batches_ - 1;
    TensorRef grad = grad_output
                         ? *grad_output
                         : emitter_.head_backward(head_weight_, head_saved_.at(micro_batch));
    head_saved_.erase(micro_batch);
    if (!grad_output && !mtp_weights_.empty())
      grad = emitter_.sum_gradients(grad, mtp_backward(micro_batch, reduce_now));
    if (last_virtual(chunk) && reduce_now)
      add_gradients(head_parameters() + shapes_.hidden);
    if (zero3() && layers.first < layers.last)
      gather_layer(layers.last - 1);
    dp_in_flight_ = false;
    for (int layer = layers.last - 1; layer >= layers.first; --layer) {
      builder_.set_layer(layer);
      if (zero3() && layer - 1 >= layers.first)
        gather_layer(layer - 1);
      // A bucket posted earlier in this pass is reduced beside this layer's kernels.
      ContentionScope beside(
          builder_, dp_in_flight_ ? parallel_.comm_sms : 0,
          dp_in_flight_ ? dp_hbm_GBps(parallel_.zero_stage == 0 ? CollectiveKind::kAllReduce
                                                                : CollectiveKind::kReduceScatter)
                        : 0);
      const auto saved = saved_.find({layer, micro_batch});
      grad = emitter_.backward(grad, layer_weights(layer), saved->second);
      saved_.erase(saved);
      if (zero3())
        reduce_scatter_layer(layer, reduce_now);
      else if (reduce_now)
        add_layer_gradients(layer);
    }
    if (layers.first < layers.last)  // the backward's reduction follows a module's backward
      reduce_delayed_amaxes(false);
    builder_.set_layer(-1);
    if (first_virtual(chunk)) {
      emitter_.embedding_backward(grad, embedding_weight_);
      if (reduce_now)
        add_gradients(shapes_.embedding_parameters());
    }
    if (reduce_now) {
      if (parallel_.overlap_grad_reduce) {
        flush_bucket(true);
        flush_expert_bucket();
      } else {
        defer_bucket();
        defer_expert_bucket();
      }
    }
    // timers('backward-compute').stop(): also waits for the gradient buckets posted above.
    if (parallel_.timer_syncs)
      builder_.synchronize_device();
    return grad;
  }

  // Without overlap_grad_reduce: each chunk's gradients in one collective after the schedule.
  void finish_grad_sync() {
    builder_.set_context("grad-sync", -1, -1);
    for (const auto& [bucketed, non_fp8] : deferred_elements_) {
      pending_elements_ = bucketed;
      pending_non_fp8_elements_ = non_fp8;
      flush_bucket(true);
    }
    deferred_elements_.clear();
    for (std::int64_t elements : expert_buffer_.deferred_elements) {
      expert_buffer_.pending_elements = elements;
      flush_expert_bucket();
    }
    expert_buffer_.deferred_elements.clear();
  }

  // finalize_model_grads' _allreduce_word_embedding_grads, after the DP sync: with a pipeline,
  // a parameter held by the first stage (the input embedding) and by the last (the tied output
  // layer, or the multi-token prediction modules' embedding) is two copies that must stay
  // equal, so their main gradients -- the whole tensor in the gradient buffer's dtype, also
  // with the distributed optimizer, whose shard of it is the same slice on both ends -- are
  // all-reduced over the embedding group. A blocking torch.distributed.all_reduce: the
  // gradient norm and the optimizer step read its result. The two ends are usually on
  // different nodes; at 175B (v h / TP = 79 M) the transfer takes a few milliseconds, and the
  // rest of the wait is the first stage finishing its backward after the last.
  void allreduce_embedding_gradients() {
    const bool held_twice = model_.tied_embeddings || model_.mtp_num_layers > 0;
    if (parallel_.pp < 2 || !held_twice || !(first_stage() || last_stage()))
      return;
    builder_.set_context("grad-sync", -1, -1);
    const std::int64_t elements = shapes_.embedding_parameters();
    // A view, not an allocation: the memory replay sees the gradient buffer once.
    const TensorRef gradient = builder_.alias(gradients_, {elements}, parallel_.gradient_dtype);
    builder_.communicate(
        {CollectiveKind::kAllReduce, roles_.embedding_group, 2, -1, kDataParallelStream}, gradient,
        gradient);
    optimizer_gradients_.push_back(gradient);
  }

  // finalize_model_grads' _update_router_expert_bias (moe_router_enable_expert_bias), after the
  // gradients' sync: every router's local_tokens_per_expert and expert_bias of this rank's
  // model chunks (its MoE layers and MTP modules' MoE layers) stacked [routers, experts],
  // get_updated_expert_bias (the counts all-reduced over TP x DP x CP, then their mean per
  // router, the offset, its sign, times the update rate, added to the bias), then each
  // router's counts zeroed and its bias copied back. All fp32.
  void update_expert_bias() {
    if (!model_.moe.expert_bias)
      return;
    std::int64_t routers = 0;
    for (const LayerRange& chunk : chunks_)
      for (int layer = chunk.first; layer < chunk.last; ++layer)
        routers += model_.is_moe_layer(layer) ? 1 : 0;
    for (const MtpWeights& module : mtp_weights_)
      routers += module.layer.moe ? 1 : 0;
    if (routers == 0)
      return;
    builder_.set_context("grad-sync", -1, -1);  // finalize_model_grads, as the DP sync
    const std::int64_t experts = shapes_.experts;
    const std::vector<std::int64_t> stacked{routers, experts};
    const auto op = [&](const char* name, std::vector<TensorRef> inputs,
                        std::vector<std::int64_t> shape) {
      const TensorRef out = builder_.tensor(std::move(shape), DType::kFloat32);
      builder_.compute(name, std::move(inputs), {out}, KernelCategory::kOther,
                       static_cast<double>(out.numel));
      return out;
    };
    const TensorRef counts =
        op("aten::stack", {builder_.tensor(stacked, DType::kFloat32)}, stacked);
    const TensorRef bias = op("aten::stack", {builder_.tensor(stacked, DType::kFloat32)}, stacked);
    const int group_size = parallel_.tp * parallel_.dp * parallel_.cp;
    if (group_size > 1)
      builder_.communicate(
          {CollectiveKind::kAllReduce, roles_.tp_dp_cp_group, group_size, -1, kDataParallelStream},
          counts, counts);
    const TensorRef sums = op("aten::sum", {counts}, {routers, 1});
    const TensorRef mean = op("aten::div", {sums}, {routers, 1});
    const TensorRef offset = op("aten::sub", {mean, counts}, stacked);
    const TensorRef sign = op("aten::sign", {offset}, stacked);
    const TensorRef step = op("aten::mul", {sign}, stacked);
    const TensorRef updated = op("aten::add", {bias, step}, stacked);
    for (std::int64_t router = 0; router < routers; ++router) {
      const TensorRef router_counts = builder_.tensor({experts}, DType::kFloat32);
      builder_.compute("aten::zero_", {router_counts}, {router_counts}, KernelCategory::kMemory, 0);
      const TensorRef router_bias = builder_.tensor({experts}, DType::kFloat32);
      builder_.compute(
          "aten::copy_",
          {router_bias, builder_.alias(updated, {experts}, DType::kFloat32, router * experts)},
          {router_bias}, KernelCategory::kMemory, 0);
    }
  }

  // overlap_param_gather: the parameters the previous step updated, all-gathered in buckets of
  // consecutive layers in forward order at the start of the iteration; the first micro-batch's
  // forward of each layer reads its bucket's output, so it waits for that all-gather only, and
  // runs beside the gathers still in flight (ZeRO 1/2 with DP x CP > 1). A MoE layer's local
  // experts sit in Megatron-Core's expert buffers, sharded over the expert-DP group: their
  // buckets form a chain of their own (DistributedDataParallel links next_param_gather_bucket_group
  // within bucket_groups and within expert_parallel_bucket_groups apart), gathered over that
  // group on its own stream; each model chunk has its own buffers, so an expert bucket never
  // spans two chunks. With expert-DP 1 every rank holds its experts whole: nothing to gather.
  void gather_parameters_for_forward() {
    if (!gathers_parameters() || !parallel_.overlap_param_gather)
      return;
    builder_.set_context("param-gather", -1, -1);
    const std::int64_t bucket = std::max<std::int64_t>(
        1, parallel_.effective_bucket_bytes() / element_bytes(parallel_.gradient_dtype));
    // FP8 primary weights: the buckets hold the linear weights (FP8), each model chunk's in a
    // buffer of its own (one DDP per chunk); every other parameter of a chunk is gathered in
    // bf16 in the bucket group partition_buckets merges the chunk's non-FP8 buckets into, that
    // of the FP8 buffer's last bucket: the chunk's first layers, whose forward waits for the
    // whole group (finish_param_sync). Issued first on the DP stream, so that their wait for
    // their FP8 bucket is a wait for both.
    const bool fp8 = shapes_.fp8_params;
    const std::vector<std::int64_t> chunks_non_fp8 =
        fp8 ? chunk_non_fp8_elements() : std::vector<std::int64_t>(chunks_.size(), 0);
    std::int64_t non_fp8 = 0;
    PendingGather pending{first_stage() && !fp8 ? shapes_.embedding_parameters() : 0, {}};
    gathered_offset_ = 0;
    fp8_gathered_offset_ = 0;
    auto dp_gather = [&](const TensorRef& shard, const TensorRef& full) {
      dp_collective(CollectiveKind::kAllGather, shard, full);
    };
    auto gather = [&] {
      PendingGather rest{std::exchange(non_fp8, 0), {}};
      std::map<int, TensorRef> unread;  // read through the FP8 bucket's wait, not as weights
      gather_bucket(rest, dp_size(), unread, dp_gather, model_.activation_dtype());
      gather_bucket(pending, dp_size(), first_use_parameters_, dp_gather, parameter_dtype());
    };
    for (std::size_t index = 0; index < chunks_.size(); ++index) {
      const LayerRange& chunk = chunks_[index];
      non_fp8 = chunks_non_fp8[index];
      for (int layer = chunk.first; layer < chunk.last; ++layer) {
        const LayerWeights& weights = weights_.at(layer);
        pending.elements += fp8 ? linear_elements(weights) : dense_parameters(weights);
        pending.layers.push_back(layer);
        if (pending.elements >= bucket)
          gather();
      }
      // The chunk's FP8 buffer ends here (its non-FP8 rest gathered with its first bucket);
      // the last chunk's closes below, after the output layer and the MTP modules.
      if (fp8 && index + 1 < chunks_.size())
        gather();
    }
    if (last_stage() && !fp8)
      pending.elements += head_parameters() + shapes_.hidden;
    // The multi-token prediction modules and their embedding copy close the last stage's
    // buffer. Their forward runs after the stage's last layer, when every gather has long
    // ended, so it reads its weights without waiting for a bucket.
    for (const MtpWeights& module : mtp_weights_)
      pending.elements += fp8 ? mtp_linear_elements(module) : mtp_dense_parameters(module);
    if (mtp_embedding_weight_.numel > 0 && !fp8)
      pending.elements += shapes_.embedding_parameters();
    gather();
    gather_expert_parameters_for_forward(bucket);
  }

  // The expert chain of gather_parameters_for_forward, after the dense part of the buffer.
  void gather_expert_parameters_for_forward(std::int64_t bucket) {
    const int size = expert_buffer_.size;
    if (size == 1)
      return;
    PendingGather pending;
    auto gather = [&] {
      gather_bucket(
          pending, size, first_use_expert_parameters_,
          [&](const TensorRef& shard, const TensorRef& full) {
            builder_.communicate({CollectiveKind::kAllGather, expert_buffer_.group, size, -1,
                                  kExpertDataParallelStream},
                                 shard, full);
          },
          parameter_dtype());
    };
    for (const LayerRange& chunk : chunks_) {
      for (int layer = chunk.first; layer < chunk.last; ++layer) {
        if (!weights_.at(layer).moe)
          continue;
        pending.elements += shapes_.local_expert_parameters();
        pending.layers.push_back(layer);
        if (pending.elements >= bucket)
          gather();
      }
      gather();  // the chunk's buffers end here
    }
    for (const MtpWeights& module : mtp_weights_)
      if (module.layer.moe)
        pending.elements += shapes_.local_expert_parameters();
    gather();
  }

  // One bucket of an overlap_param_gather chain (parameters of consecutive layers): each rank's
  // shard all-gathered over `size` ranks by `all_gather` into the next slice of the parameter
  // buffer (of `dtype`), whose output the bucket's layers read in their first forward.
  struct PendingGather {
    std::int64_t elements = 0;
    std::vector<int> layers;
  };
  template <typename AllGather>
  void gather_bucket(PendingGather& pending, int size, std::map<int, TensorRef>& first_use,
                     AllGather all_gather, DType dtype) {
    if (pending.elements == 0)
      return;
    const std::int64_t shard = ceil_div(pending.elements, size);
    const TensorRef full = parameter_view(shard * size, -1, dtype);
    all_gather(parameter_view(shard, -1, dtype), full);
    gathered_offset(dtype) += shard * size;
    for (int layer : pending.layers)
      first_use[layer] = full;
    pending = {};
  }

  // Megatron-Core's gradient clipping (optimizer.py, clip_grads.py): get_grad_norm_fp32 is the
  // L2 norm of the local main gradients (the shard with the distributed optimizer), squared and
  // summed by one all-reduce of one fp32 over the optimizer's grad_stats_parallel_group, then
  // clip_grad_by_total_norm_fp32 scales each optimizer's gradients. The dense optimizer's group
  // is the model-parallel group (TP x PP), or with the distributed optimizer the whole job
  // (gradient_norm_group_name). With MoE, get_megatron_optimizer chains an expert optimizer on
  // every rank of a model with experts, also on stages without MoE layers (the param groups are
  // aligned across ranks): without the distributed optimizer its norm is its own, summed over
  // ETP x EP x PP (expt_tp_pp_group), the ranks holding the other experts and expert shards;
  // with it both optimizers' group is the whole job and ChainedOptimizer makes one norm of both
  // (grads_states_parallel_group_is_shared). The first norm kernel reads what every gradient
  // reduction of this rank wrote (the buckets, or with ZeRO the reduce-scattered shards):
  // train_step's finish_grad_sync waits for them all before optimizer.step() runs.
  void clip_gradients() {
    builder_.set_context("grad-clip", -1, -1);
    const bool distributed_optimizer = parallel_.zero_stage >= 1;
    const bool expert_optimizer =
        model_.moe_layer_count() > 0 && expert_parameters_apart(parallel_);
    // Without an expert optimizer the experts' gradients are dense ones.
    const std::int64_t dense = expert_optimizer ? dense_optimizer_elements() : optimizer_elements();
    const std::int64_t experts = expert_optimizer ? expert_optimizer_elements() : 0;
    auto gradients_of = [&](std::int64_t elements, std::int64_t offset) {
      return builder_.alias(gradients_, {elements}, parallel_.gradient_dtype, offset);
    };
    // The reduction rule prices input 0 alone: the others are dependencies.
    auto local_norm = [&](std::int64_t elements, std::int64_t offset,
                          const std::vector<TensorRef>& reduced) {
      std::vector<TensorRef> inputs{gradients_of(elements, offset)};
      inputs.insert(inputs.end(), reduced.begin(), reduced.end());
      const TensorRef norm = builder_.tensor({1}, DType::kFloat32);
      builder_.compute("aten::linalg_vector_norm", std::move(inputs), {norm},
                       KernelCategory::kOther, 2.0 * static_cast<double>(elements));
      return norm;
    };
    auto sum_over = [&](const TensorRef& norm, const std::string& group, int size) {
      if (size > 1)
        builder_.communicate({CollectiveKind::kAllReduce, group, size, -1, kDataParallelStream},
                             norm, norm);
    };
    const bool one_norm = !expert_optimizer || distributed_optimizer;
    TensorRef norm = local_norm(one_norm ? dense + experts : dense, 0, optimizer_gradients_);
    sum_over(norm, roles_.gradient_norm_group, gradient_norm_group_size(parallel_));
    if (!one_norm) {
      norm = local_norm(experts, dense, {});
      sum_over(norm, roles_.expert_model_parallel_group,
               parallel_.expert_tp() * parallel_.ep * parallel_.pp);
    }
    auto scale = [&](std::int64_t elements, std::int64_t offset) {
      const TensorRef gradients = gradients_of(elements, offset);
      builder_.compute("aten::mul_", {gradients, norm}, {gradients}, KernelCategory::kOther,
                       static_cast<double>(elements));
    };
    scale(dense, 0);
    if (experts > 0)  // ChainedOptimizer.step skips an optimizer without parameters
      scale(experts, dense);
  }

  // The dense optimizer's share of optimizer_elements(): with ZeRO its shard over DP x CP.
  std::int64_t dense_optimizer_elements() const {
    const std::int64_t local = stage_parameters();
    return parallel_.zero_stage < 1 ? local : ceil_div(local, dp_size());
  }

  // The experts' share: with ZeRO their shard over expert-DP.
  std::int64_t expert_optimizer_elements() const {
    const std::int64_t experts = stage_expert_parameters();
    return parallel_.zero_stage < 1 ? experts : ceil_div(experts, expert_buffer_.size);
  }

  std::int64_t optimizer_elements() const {
    return dense_optimizer_elements() + expert_optimizer_elements();
  }

  bool gathers_parameters() const {
    return dp_size() > 1 && (parallel_.zero_stage == 1 || parallel_.zero_stage == 2);
  }

  void optimizer_step() {
    builder_.set_context("optimizer", -1, -1);
    const std::int64_t n = optimizer_elements();
    const DType master = DType::kFloat32;
    std::vector<TensorRef> grads = optimizer_gradients_;
    if (grads.empty())
      grads.push_back(builder_.alias(gradients_, {n}, parallel_.gradient_dtype));
    // Adam's moments and the fp32 master weights of this rank's shard persist.
    const TensorRef exp_avg = builder_.tensor({n}, master);
    const TensorRef exp_avg_sq = builder_.tensor({n}, master);
    const TensorRef parameters = builder_.tensor({n}, master);
    optimizer_state_ = {exp_avg, exp_avg_sq, parameters};
    const TensorRef gradient = builder_.alias(gradients_, {n}, parallel_.gradient_dtype);
    // Adam as the multi-tensor kernels run it: three passes over the shard.
    std::vector<TensorRef> lerp_inputs{exp_avg};
    lerp_inputs.insert(lerp_inputs.end(), grads.begin(), grads.end());
    builder_.compute("aten::lerp_", lerp_inputs, {exp_avg}, KernelCategory::kOther,
                     static_cast<double>(n));
    builder_.compute("aten::addcmul_", {exp_avg_sq, gradient, gradient}, {exp_avg_sq},
                     KernelCategory::kOther, 2.0 * static_cast<double>(n));
    builder_.compute("aten::addcdiv_", {parameters, exp_avg, exp_avg_sq}, {parameters},
                     KernelCategory::kOther, 3.0 * static_cast<double>(n));
    if (shapes_.fp8_params)
      quantize_main_weights(parameters);
    else
      builder_.compute("aten::copy_", {parameter_view(n, 0), parameters}, {},
                       KernelCategory::kMemory, 0);
    if (gathers_parameters() && !parallel_.overlap_param_gather) {
      builder_.set_phase("param-gather");
      gathered_offset_ = 0;
      fp8_gathered_offset_ = 0;
      for (const ParameterBucket& bucket : parameter_buckets_) {
        const std::int64_t shard = ceil_div(bucket.elements, dp_size());
        const TensorRef full = parameter_view(shard * dp_size(), -1, bucket.dtype);
        dp_collective(CollectiveKind::kAllGather, parameter_view(shard, -1, bucket.dtype), full);
        gathered_offset(bucket.dtype) += shard * dp_size();
      }
      for (std::int64_t bucket_elements : expert_buffer_.bucket_elements) {
        const std::int64_t shard = ceil_div(bucket_elements, expert_buffer_.size);
        const TensorRef full = parameter_view(shard * expert_buffer_.size, -1, parameter_dtype());
        expert_collective(CollectiveKind::kAllGather, parameter_view(shard, -1, parameter_dtype()),
                          full);
        gathered_offset(parameter_dtype()) += shard * expert_buffer_.size;
      }
    }
  }

  // FP8 primary weights: the step's fp32 main weights written into the model's weights as
  // Megatron-Core's _copy_main_params_to_model_params does with them: the non-FP8 part of the
  // dense shard copied to bf16, the FP8 part quantized by quantize_param_shard (Transformer
  // Engine's cast_master_weights_to_fp8), once for the dense optimizer and once for the expert
  // optimizer, each over its own DP group.
  void quantize_main_weights(const TensorRef& main) {
    const std::int64_t dense = dense_optimizer_elements();
    const std::int64_t dense_fp8 = std::min(dense, ceil_div(stage_linear_elements(), dp_size()));
    const std::int64_t rest = dense - dense_fp8;
    auto main_slice = [&](std::int64_t elements, std::int64_t offset) {
      return builder_.alias(main, {elements}, DType::kFloat32, offset);
    };
    if (rest > 0)
      builder_.compute("aten::copy_", {parameter_view(rest, 0), main_slice(rest, dense_fp8)}, {},
                       KernelCategory::kMemory, 0);
    const auto fp8_buckets =
        std::count_if(parameter_buckets_.begin(), parameter_buckets_.end(),
                      [](const ParameterBucket& bucket) { return bucket.dtype == DType::kFloat8; });
    quantize_shard(main_slice(dense_fp8, 0), stage_linear_weights(), dp_group_, dp_size(),
                   static_cast<std::int64_t>(fp8_buckets));
    const std::int64_t experts = expert_optimizer_elements();
    if (experts > 0)
      quantize_shard(main_slice(experts, dense), stage_expert_weights(), expert_buffer_.group,
                     expert_buffer_.size,
                     static_cast<std::int64_t>(expert_buffer_.bucket_elements.size()));
  }

  // cast_master_weights_to_fp8 on one optimizer's shard `main` (fp32) of `weights` FP8 weights
  // sharded over `size` ranks in `buckets` buckets. The shard holds a fragment of every weight
  // it overlaps, about weights / size plus one per bucket edge; TE's Python loop launches one
  // cast per fragment (current scaling first an amax kernel per fragment). The amaxes of all
  // the weights (zero where this rank holds none) are packed and MAX-reduced over the group:
  // after the casts under delayed scaling (the amax history's next entry), before them under
  // current scaling (the scale comes from it). Then the scales and their inverses are updated.
  void quantize_shard(const TensorRef& main, std::int64_t weights, const std::string& group,
                      int size, std::int64_t buckets) {
    if (weights == 0 || main.numel == 0)
      return;
    const std::int64_t fragments =
        std::min(weights, ceil_div(weights, size) + (size > 1 ? buckets : 0));
    const std::int64_t per_fragment = ceil_div(main.numel, fragments);
    const TensorRef amaxes = builder_.tensor({weights}, DType::kFloat32);
    constexpr const char* kMultiTensorScale = "te::multi_tensor_scale";
    auto small = [&](const char* name, const TensorRef& in, const TensorRef& out) {
      builder_.compute(name, {in}, {out}, KernelCategory::kOther, static_cast<double>(weights));
    };
    auto for_each_fragment = [&](auto emit) {
      for (std::int64_t fragment = 0; fragment < fragments; ++fragment) {
        const std::int64_t offset = fragment * per_fragment;
        const std::int64_t elements = std::min(per_fragment, main.numel - offset);
        if (elements > 0)
          emit(builder_.alias(main, {elements}, DType::kFloat32, offset),
               parameter_view(elements, offset, DType::kFloat8));
      }
    };
    auto reduce_amaxes = [&](const TensorRef& packed) {
      if (size > 1)
        builder_.communicate({CollectiveKind::kAllReduce, group, size, -1, kDataParallelStream},
                             packed, packed);
    };
    // Each cast reads its fp32 fragment and writes its E4M3 bytes into the parameter buffer
    // (under delayed scaling also the fragment's amax).
    const TensorRef scales = builder_.tensor({weights}, DType::kFloat32);
    if (shapes_.fp8_current_scaling) {
      for_each_fragment([&](const TensorRef& fragment, const TensorRef&) {
        builder_.compute(std::string(kFp8AmaxOpName), {fragment}, {amaxes}, KernelCategory::kOther,
                         static_cast<double>(fragment.numel));
      });
      reduce_amaxes(amaxes);
      small("te::multi_tensor_compute_scale_and_scale_inv", amaxes, scales);
      for_each_fragment([&](const TensorRef& fragment, const TensorRef& fp8) {
        builder_.compute(std::string(kFp8MasterCastOpName), {fragment, scales}, {fp8},
                         KernelCategory::kOther, 2.0 * static_cast<double>(fragment.numel));
      });
      return;
    }
    for_each_fragment([&](const TensorRef& fragment, const TensorRef& fp8) {
      builder_.compute(std::string(kFp8MasterCastOpName), {fragment}, {fp8, amaxes},
                       KernelCategory::kOther, 2.0 * static_cast<double>(fragment.numel));
    });
    const TensorRef packed = builder_.tensor({weights}, DType::kFloat32);
    small(kMultiTensorScale, amaxes, packed);
    reduce_amaxes(packed);
    small(kMultiTensorScale, packed, amaxes);
    small(kMultiTensorScale, amaxes, scales);
    small("aten::reciprocal", scales, scales);
    small(kMultiTensorScale, scales, builder_.tensor({weights}, DType::kFloat32));
  }

 private:
  // Elements of the parameter buffer from `offset` on (gathered_offset_ by default): what the
  // parameter all-gathers fill and the optimizer's copy writes, in the activation dtype.
  // `dtype` kFloat8: the FP8 primary weights' buffer instead (fp8_gathered_offset_).
  TensorRef parameter_view(std::int64_t elements, std::int64_t offset = -1,
                           DType dtype = DType::kUnknown) {
    const bool fp8 = dtype == DType::kFloat8 && shapes_.fp8_params;
    return builder_.alias(fp8 ? fp8_parameters_ : parameters_, {elements},
                          fp8 ? DType::kFloat8 : model_.activation_dtype(),
                          offset >= 0 ? offset : gathered_offset(dtype));
  }
  std::int64_t& gathered_offset(DType dtype) {
    return dtype == DType::kFloat8 && shapes_.fp8_params ? fp8_gathered_offset_ : gathered_offset_;
  }
  // The dtype of the bucketed parameters: every parameter, or with FP8 primary weights the
  // linear weights (dense buckets) and the experts (expert buckets).
  DType parameter_dtype() const {
    return shapes_.fp8_params ? DType::kFloat8 : model_.activation_dtype();
  }
  // Elements of a layer's Transformer Engine linear weights outside its experts (FP8 primary
  // weights under fp8_param_gather); an MTP module's with its eh_proj.
  static std::int64_t linear_elements(const LayerWeights& weights) {
    std::int64_t elements = 0;
    for (const TensorRef* weight : {&weights.qkv, &weights.q_down, &weights.q_up, &weights.kv_down,
                                    &weights.kv_up, &weights.proj, &weights.fc1, &weights.fc2})
      elements += weight->numel;
    return elements;
  }
  static std::int64_t mtp_linear_elements(const MtpWeights& module) {
    return linear_elements(module.layer) + module.eh_proj.numel;
  }
  // The stage's dense linear weights: their elements and how many tensors they are.
  std::int64_t stage_linear_elements() const {
    std::int64_t elements = 0;
    for (const auto& [layer, weights] : weights_)
      elements += linear_elements(weights);
    for (const MtpWeights& module : mtp_weights_)
      elements += mtp_linear_elements(module);
    return elements;
  }
  std::int64_t stage_linear_weights() const {
    std::int64_t count = 0;
    auto count_layer = [&](const LayerWeights& weights) {
      for (const TensorRef* weight :
           {&weights.qkv, &weights.q_down, &weights.q_up, &weights.kv_down, &weights.kv_up,
            &weights.proj, &weights.fc1, &weights.fc2})
        count += weight->numel > 0 ? 1 : 0;
    };
    for (const auto& [layer, weights] : weights_)
      count_layer(weights);
    for (const MtpWeights& module : mtp_weights_) {
      count_layer(module.layer);
      ++count;  // eh_proj
    }
    return count;
  }
  // The stage's expert weights as parameters: each local expert's FC1 and FC2.
  std::int64_t stage_expert_weights() const {
    std::int64_t count = 0;
    for (const auto& [layer, weights] : weights_)
      count += weights.moe ? 2 * shapes_.experts_local : 0;
    for (const MtpWeights& module : mtp_weights_)
      count += module.layer.moe ? 2 * shapes_.experts_local : 0;
    return count;
  }
  // A bucket of the gradient buffer (ZeRO 0 and 1 reduce in place), or a buffer of its own
  // when the gradient buffer holds only the shard (ZeRO 2).
  TensorRef gradient_bucket(std::int64_t elements) {
    if (parallel_.zero_stage >= 2)
      return builder_.tensor({elements}, parallel_.gradient_dtype);
    return builder_.alias(gradients_, {elements}, parallel_.gradient_dtype, bucket_offset_);
  }
  // This rank's share of the bucket just made, in the gradient buffer.
  TensorRef gradient_shard(std::int64_t elements) {
    const std::int64_t offset = parallel_.zero_stage >= 2 ? shard_offset_ : bucket_offset_;
    shard_offset_ += elements;
    return builder_.alias(gradients_, {elements}, parallel_.gradient_dtype, offset);
  }

  bool zero3() const { return parallel_.zero_stage == 3 && dp_size() > 1; }
  // The HBM bandwidth a NCCL data-parallel collective of `kind` moves while it runs.
  double dp_hbm_GBps(CollectiveKind kind) const {
    return kernels::hbm_bytes_per_bus_byte(kind, kernels::CommDataPath::kNcclStaged) *
           parallel_.bus_rates.dp_GBps;
  }
  // The ranks that reduce this rank's gradients: DP x CP.
  int dp_size() const { return parallel_.gradient_group_size(); }

  // A layer's parameters reduced over DP x CP: all of a dense layer's, a MoE layer's but its
  // experts (attention, norms, router, shared experts).
  std::int64_t dense_parameters(const LayerWeights& weights) const {
    return weights.moe ? shapes_.moe_dense_parameters() : shapes_.layer_parameters();
  }

  // FP8 primary weights: each model chunk's parameters outside its FP8 buffer (norms, the
  // router; the first chunk of the first stage the embedding; the last chunk of the last stage
  // the output layer, final norm and MTP modules' rest). They sum to the stage's non-FP8
  // parameters.
  std::vector<std::int64_t> chunk_non_fp8_elements() const {
    std::vector<std::int64_t> elements(chunks_.size(), 0);
    for (std::size_t index = 0; index < chunks_.size(); ++index)
      for (int layer = chunks_[index].first; layer < chunks_[index].last; ++layer)
        elements[index] +=
            dense_parameters(weights_.at(layer)) - linear_elements(weights_.at(layer));
    const std::int64_t in_layers =
        std::accumulate(elements.begin(), elements.end(), std::int64_t{0});
    const std::int64_t embedding = first_stage() ? shapes_.embedding_parameters() : 0;
    elements.front() += embedding;
    elements.back() += stage_parameters() - stage_linear_elements() - in_layers - embedding;
    return elements;
  }

  // The output layer's weights on the last stage: its own, or a copy of the tied word
  // embedding on a later stage than the first; none where one stage holds a tied matrix (the
  // head reads the embedding, their gradients accumulate in one main gradient).
  std::int64_t head_parameters() const {
    return model_.tied_embeddings && first_stage() ? 0 : shapes_.embedding_parameters();
  }

  // Parameters reduced over DP x CP: every dense layer, a MoE layer's attention, norms, router
  // and shared experts, the embeddings.
  std::int64_t stage_parameters() const {
    std::int64_t total = 0;
    for (const auto& [layer, weights] : weights_)
      total += dense_parameters(weights);
    if (first_stage())
      total += shapes_.embedding_parameters();
    if (last_stage())
      total += head_parameters() + shapes_.hidden;
    for (const MtpWeights& module : mtp_weights_)
      total += mtp_dense_parameters(module);
    if (mtp_embedding_weight_.numel > 0)
      total += shapes_.embedding_parameters();
    return total;
  }

  // Parameters reduced over the expert-DP group: the local experts of the MoE layers.
  std::int64_t stage_expert_parameters() const {
    std::int64_t total = 0;
    for (const auto& [layer, weights] : weights_)
      total += weights.moe ? shapes_.local_expert_parameters() : 0;
    for (const MtpWeights& module : mtp_weights_)
      total += module.layer.moe ? shapes_.local_expert_parameters() : 0;
    return total;
  }

  // One multi-token prediction module's parameters reduced over DP x CP: its layer's (a MoE
  // layer's dense part), eh_proj, enorm, hnorm and the layer's final norm.
  std::int64_t mtp_dense_parameters(const MtpWeights& module) const {
    return dense_parameters(module.layer) + module.eh_proj.numel + 3 * shapes_.hidden;
  }
  const TensorRef& mtp_embedding() const {
    return mtp_embedding_weight_.numel > 0 ? mtp_embedding_weight_ : embedding_weight_;
  }

  // FP8 delayed scaling (Transformer Engine's DelayedScaling, Megatron-Core's "delayed"
  // recipe): leaving an fp8_autocast region TE concatenates the amaxes in its global buffer,
  // MAX-reduces them over the autocast's group with a blocking c10d all-reduce, and takes them
  // into the amax histories, scales and inverse scales with one fused kernel (fp8.py
  // reduce_and_update_fp8_tensors). The buffer is keyed by pass, recipe and group only, and
  // every FP8 module of the rank registers its amaxes in it once, so each reduction covers every
  // chunk's and MTP module's GEMMs (per GEMM 3 in the forward: input, weight, output; 2 in the
  // backward: output and input gradients), whichever region exits. Megatron's group is its amax
  // reduction group, TP x DP x CP of the stage (get_amax_reduction_group with context
  // parallelism). The backward's reduction runs at the end of the backward of the region's
  // first module (reduce_and_update_bwd_fp8_tensors). Current and blockwise scaling keep no
  // amax history: nothing. The history is priced at one entry (Megatron's
  // fp8_amax_history_len default; NeMo's 1024 adds a few MB of reads per update).
  void reduce_delayed_amaxes(bool forward) {
    if (model_.fp8_recipe != Fp8Recipe::kDelayed || parallel_.layer_probe)
      return;
    if (stage_fp8_gemms_ == 0)
      return;
    const std::int64_t amaxes = stage_fp8_gemms_ * (forward ? 3 : 2);
    const TensorRef recorded = builder_.tensor({amaxes}, DType::kFloat32);
    const TensorRef packed = builder_.tensor({amaxes}, DType::kFloat32);
    builder_.compute("aten::cat", {recorded}, {packed}, KernelCategory::kMemory, 0);
    const int group_size = parallel_.tp * parallel_.dp * parallel_.cp;
    if (group_size > 1)
      builder_.communicate(
          {CollectiveKind::kAllReduce, roles_.tp_dp_cp_group, group_size, -1, kAmaxReductionStream},
          packed, packed);
    builder_.compute(std::string(kFp8AmaxScaleUpdateOpName), {packed}, {packed},
                     KernelCategory::kOther, static_cast<double>(amaxes));
  }

  // The rank's FP8 GEMMs per pass: every chunk's layers and the MTP modules (eh_proj and layer).
  std::int64_t count_stage_fp8_gemms() const {
    std::int64_t gemms = 0;
    for (const auto& [layer, weights] : weights_)
      gemms += emitter_.fp8_gemms(weights);
    for (const MtpWeights& module : mtp_weights_)
      gemms += emitter_.fp8_gemms(module.layer) + (shapes_.fp8_linear ? 1 : 0);
    return gemms;
  }

  // A multi-token prediction module runs two regions, eh_proj's and its layer's
  // (MultiTokenPredictionLayer's two fp8 contexts), so two reductions per pass. Both are
  // emitted after the module's forward (backward): the eh_proj region's runs between eh_proj
  // and the layer in Megatron, a placement that moves no kernel time.
  void reduce_mtp_amaxes(bool forward) {
    reduce_delayed_amaxes(forward);
    reduce_delayed_amaxes(forward);
  }

  // The modules' backward, last first (each module's input is the previous one's output);
  // returns the gradient of the decoder's output they add. At the last micro-batch their
  // gradients join the buckets.
  TensorRef mtp_backward(int micro_batch, bool reduce_now) {
    TensorRef grad;
    for (int module = static_cast<int>(mtp_weights_.size()) - 1; module >= 0; --module) {
      builder_.set_layer(model_.layers + module);
      const auto saved = mtp_saved_.find({module, micro_batch});
      grad = emitter_.mtp_backward(grad, mtp_embedding(), head_weight_,
                                   mtp_weights_[static_cast<std::size_t>(module)], saved->second);
      reduce_mtp_amaxes(false);
      mtp_saved_.erase(saved);
      if (reduce_now) {
        const MtpWeights& weights = mtp_weights_[static_cast<std::size_t>(module)];
        add_gradients(mtp_dense_parameters(weights), mtp_linear_elements(weights));
        if (weights.layer.moe && expert_buffer_.size > 1)
          expert_buffer_.pending_elements += shapes_.local_expert_parameters();
      }
    }
    if (reduce_now && mtp_embedding_weight_.numel > 0)
      add_gradients(shapes_.embedding_parameters());
    builder_.set_layer(-1);
    return grad;
  }

  // overlap_param_gather: the layer's weights as views of the buckets that gathered them (a
  // MoE layer's attention, shared experts and router in its dense bucket, its experts in its
  // expert bucket), its FP8 copies its own.
  LayerWeights gathered_for_first_use(int layer) const {
    const LayerWeights& own = weights_.at(layer);
    const TensorRef& dense = first_use_parameters_.at(layer);
    if (!own.moe && !own.mla) {
      LayerWeights weights = emitter_.weights_in(dense);
      weights.qkv_fp8 = own.qkv_fp8;
      weights.proj_fp8 = own.proj_fp8;
      weights.fc1_fp8 = own.fc1_fp8;
      weights.fc2_fp8 = own.fc2_fp8;
      return weights;
    }
    LayerWeights weights = own;
    for (TensorRef* weight :
         {&weights.qkv, &weights.proj, &weights.fc1, &weights.fc2, &weights.router, &weights.q_down,
          &weights.q_up, &weights.kv_down, &weights.kv_up})
      // A dense layer has no router, MLA no qkv; with FP8 primary weights the router (bf16) is
      // not in the layer's FP8 bucket.
      if (weight->tensor_id >= 0 && !(shapes_.fp8_params && weight == &weights.router))
        *weight = RankTraceBuilder::view(dense, weight->shape);
    if (const auto experts = first_use_expert_parameters_.find(layer);
        experts != first_use_expert_parameters_.end())
      for (TensorRef* weight : {&weights.expert_fc1, &weights.expert_fc2})
        *weight = RankTraceBuilder::view(experts->second, weight->shape);
    return weights;
  }

  const LayerWeights& layer_weights(int layer) {
    if (zero3())
      return gathered_.at(layer);
    return weights_.at(layer);
  }

  void dp_collective(CollectiveKind kind, const TensorRef& input, const TensorRef& output) {
    builder_.communicate({kind, dp_group_, dp_size(), -1, kDataParallelStream}, input, output);
  }

  // ZeRO-3: the layer's parameters, all-gathered over DP for this use. A MoE layer's experts
  // are sharded over the expert-DP group instead (Megatron keeps expert parameters in buffers
  // of their own, sharded over DP x CP / EP) and gathered there; with expert-DP 1 each rank
  // holds its experts whole. A layer's place in the parameter and gradient buffers: its dense
  // shard, then its expert shard.
  std::int64_t zero3_dense_shard(const LayerWeights& weights) const {
    return ceil_div(dense_parameters(weights), dp_size());
  }
  std::int64_t zero3_expert_shard(const LayerWeights& weights) const {
    return weights.moe ? ceil_div(shapes_.local_expert_parameters(), expert_buffer_.size) : 0;
  }

  void gather_layer(int layer) {
    const LayerWeights& own = weights_.at(layer);
    const std::int64_t shard = zero3_dense_shard(own);
    const std::int64_t offset = layer_shard_offset_.at(layer);
    const TensorRef full = builder_.tensor({shard * dp_size()}, model_.activation_dtype());
    dp_collective(CollectiveKind::kAllGather, parameter_view(shard, offset), full);
    if (!own.moe) {
      gathered_[layer] = emitter_.weights_in(full);
      return;
    }
    LayerWeights gathered = own;
    for (TensorRef* weight :
         {&gathered.qkv, &gathered.proj, &gathered.fc1, &gathered.fc2, &gathered.router})
      *weight = RankTraceBuilder::view(full, weight->shape);
    const std::int64_t expert_shard = zero3_expert_shard(own);
    if (expert_buffer_.size > 1) {
      const TensorRef experts =
          builder_.tensor({expert_shard * expert_buffer_.size}, model_.activation_dtype());
      expert_collective(CollectiveKind::kAllGather, parameter_view(expert_shard, offset + shard),
                        experts);
      for (TensorRef* weight : {&gathered.expert_fc1, &gathered.expert_fc2})
        *weight = RankTraceBuilder::view(experts, weight->shape);
    } else {
      gathered.expert_fc1 = builder_.alias(parameters_, own.expert_fc1.shape,
                                           model_.activation_dtype(), offset + shard);
      gathered.expert_fc2 =
          builder_.alias(parameters_, own.expert_fc2.shape, model_.activation_dtype(),
                         offset + shard + own.expert_fc1.numel);
    }
    gathered_[layer] = gathered;
  }

  void reduce_scatter_layer(int layer, bool for_optimizer) {
    const LayerWeights& own = weights_.at(layer);
    const std::int64_t shard = zero3_dense_shard(own);
    const std::int64_t offset = layer_shard_offset_.at(layer);
    // Each micro-batch's shard is accumulated into the layer's place in the gradient shard.
    const TensorRef output = builder_.alias(gradients_, {shard}, parallel_.gradient_dtype, offset);
    dp_collective(CollectiveKind::kReduceScatter,
                  builder_.tensor({shard * dp_size()}, parallel_.gradient_dtype), output);
    if (for_optimizer)
      optimizer_gradients_.push_back(output);
    // Expert-DP 1: the experts' gradients are this rank's alone, nothing to reduce.
    if (!own.moe || expert_buffer_.size == 1)
      return;
    const std::int64_t expert_shard = zero3_expert_shard(own);
    const TensorRef expert_output =
        builder_.alias(gradients_, {expert_shard}, parallel_.gradient_dtype, offset + shard);
    expert_collective(
        CollectiveKind::kReduceScatter,
        builder_.tensor({expert_shard * expert_buffer_.size}, parallel_.gradient_dtype),
        expert_output);
    if (for_optimizer)
      optimizer_gradients_.push_back(expert_output);
  }

  void expert_collective(CollectiveKind kind, const TensorRef& input, const TensorRef& output) {
    builder_.communicate({kind, expert_buffer_.group, expert_buffer_.size, -1, kDataParallelStream},
                         input, output);
  }

  void add_layer_gradients(int layer) {
    const LayerWeights& weights = weights_.at(layer);
    if (!weights.moe) {
      add_gradients(shapes_.layer_parameters(), linear_elements(weights));
      return;
    }
    add_gradients(shapes_.moe_dense_parameters(), linear_elements(weights));
    if (expert_buffer_.size == 1)
      return;
    expert_buffer_.pending_elements += shapes_.local_expert_parameters();
    if (parallel_.overlap_grad_reduce &&
        expert_buffer_.pending_elements * element_bytes(parallel_.gradient_dtype) >=
            parallel_.effective_bucket_bytes())
      flush_expert_bucket();
  }

  void defer_expert_bucket() {
    if (expert_buffer_.size > 1 && expert_buffer_.pending_elements > 0)
      expert_buffer_.deferred_elements.push_back(expert_buffer_.pending_elements);
    expert_buffer_.pending_elements = 0;
  }

  // The expert gradients, reduced over the expert-DP group as Megatron's separate expert
  // gradient buffers are.
  void flush_expert_bucket() {
    ExpertGradientBuffer& buffer = expert_buffer_;
    if (buffer.size == 1 || buffer.pending_elements == 0)
      return;
    const std::int64_t elements = ceil_div(buffer.pending_elements, buffer.size) * buffer.size;
    buffer.pending_elements = 0;
    const TensorRef bucket = gradient_bucket(elements);
    dp_in_flight_ = true;
    if (parallel_.zero_stage == 0) {
      expert_collective(CollectiveKind::kAllReduce, bucket, bucket);
      optimizer_gradients_.push_back(bucket);
    } else {
      const TensorRef shard = gradient_shard(elements / buffer.size);
      expert_collective(CollectiveKind::kReduceScatter, bucket, shard);
      optimizer_gradients_.push_back(shard);
      buffer.bucket_elements.push_back(elements);
    }
    bucket_offset_ += elements;
  }

  // `elements` gradients ready, `fp8_elements` of them of FP8 weights' (Transformer Engine's
  // linear layers). With FP8 primary weights those fill the buckets of their own buffer and the
  // rest wait for the chunk's last bucket: Megatron-Core's partition_buckets merges the non-FP8
  // buffer's buckets into the group of the FP8 buffer's last bucket (the chunk's first layers).
  void add_gradients(std::int64_t elements, std::int64_t fp8_elements = 0) {
    if (dp_size() == 1)
      return;
    const std::int64_t bucketed = shapes_.fp8_params ? fp8_elements : elements;
    pending_elements_ += bucketed;
    pending_non_fp8_elements_ += elements - bucketed;
    if (parallel_.overlap_grad_reduce &&
        pending_elements_ * element_bytes(parallel_.gradient_dtype) >=
            parallel_.effective_bucket_bytes())
      flush_bucket(false);
  }

  void defer_bucket() {
    if (dp_size() > 1 && (pending_elements_ > 0 || pending_non_fp8_elements_ > 0))
      deferred_elements_.emplace_back(pending_elements_, pending_non_fp8_elements_);
    pending_elements_ = 0;
    pending_non_fp8_elements_ = 0;
  }

  // The pending bucket; `last`: the chunk's last, with the non-FP8 gradients beside it.
  void flush_bucket(bool last) {
    if (dp_size() == 1)
      return;
    reduce_bucket(std::exchange(pending_elements_, 0), parameter_dtype());
    if (last)
      reduce_bucket(std::exchange(pending_non_fp8_elements_, 0), model_.activation_dtype());
  }

  // One bucket's gradients reduced over DP x CP; with ZeRO its parameters (of `dtype`) are
  // gathered again after the step.
  void reduce_bucket(std::int64_t pending, DType dtype) {
    if (pending == 0)
      return;
    const std::int64_t elements = ceil_div(pending, dp_size()) * dp_size();
    const TensorRef bucket = gradient_bucket(elements);
    dp_in_flight_ = true;
    if (parallel_.zero_stage == 0) {
      dp_collective(CollectiveKind::kAllReduce, bucket, bucket);
      optimizer_gradients_.push_back(bucket);
    } else {
      const TensorRef shard = gradient_shard(elements / dp_size());
      dp_collective(CollectiveKind::kReduceScatter, bucket, shard);
      optimizer_gradients_.push_back(shard);
      parameter_buckets_.push_back({elements, dtype});
    }
    bucket_offset_ += elements;
  }

  const TransformerConfig& model_;
  const ParallelConfig& parallel_;
  const RankRoles& roles_;
  LocalShapes shapes_;
  RankTraceBuilder& builder_;
  std::vector<LayerRange> chunks_;
  LayerEmitter emitter_;
  std::string dp_group_;
  int micro_batches_;
  std::map<int, LayerWeights> weights_;
  std::map<int, LayerWeights> gathered_;
  TensorRef embedding_weight_;
  TensorRef head_weight_;
  std::int64_t pending_elements_ = 0;
  std::int64_t pending_non_fp8_elements_ = 0;  // FP8 primary weights: the other gradients
  std::vector<TensorRef> optimizer_gradients_;
  // The dense buckets the distributed optimizer gathers after its step, with their dtype.
  struct ParameterBucket {
    std::int64_t elements = 0;
    DType dtype = DType::kBFloat16;
  };
  std::vector<ParameterBucket> parameter_buckets_;
  // Without overlap_grad_reduce: each chunk's (bucketed, non-FP8) gradients, reduced after the
  // schedule.
  std::vector<std::pair<std::int64_t, std::int64_t>> deferred_elements_;
  // overlap_param_gather: layer -> the dense bucket and (MoE layers) the expert bucket it reads.
  std::map<int, TensorRef> first_use_parameters_, first_use_expert_parameters_;
  // MoE: the local experts' gradients, bucketed apart from the dense ones.
  struct ExpertGradientBuffer {
    std::string group;
    int size = 1;
    std::int64_t pending_elements = 0;
    std::vector<std::int64_t> bucket_elements;
    std::vector<std::int64_t> deferred_elements;
  };
  ExpertGradientBuffer expert_buffer_;
  bool dp_in_flight_ = false;  // a gradient bucket was posted in this backward pass
  // Persistent memory (place_persistent_state) and what each layer's forward keeps for its
  // backward, per (layer, micro-batch), dropped when the backward has read it.
  TensorRef parameters_, fp8_parameters_, fp8_weights_, gradients_;
  std::vector<TensorRef> optimizer_state_;
  std::map<int, std::int64_t> layer_shard_offset_;  // layer -> its place in parameters_
  std::int64_t bucket_offset_ = 0, shard_offset_ = 0, gathered_offset_ = 0,
               fp8_gathered_offset_ = 0;
  std::map<std::pair<int, int>, ForwardSaved> saved_;
  std::map<int, HeadSaved> head_saved_;  // micro-batch -> the LM head's
  // Multi-token prediction (last stage): the modules, the stage's embedding copy (PP > 1), and
  // (module, micro-batch) -> what each module's forward saved.
  std::vector<MtpWeights> mtp_weights_;
  std::int64_t stage_fp8_gemms_ = 0;  // every reduction's GEMMs (reduce_delayed_amaxes)
  TensorRef mtp_embedding_weight_;
  std::map<std::pair<int, int>, MtpSaved> mtp_saved_;
};

// The match tag of a stage-boundary transfer. Activations and gradients are two message
// streams, each paired in order. They share a rank pair only with two interleaved stages (the
// ring's wrap-around link is then the backward link, both ways): there gradients get a tag of
// their own; elsewhere every transfer keeps tag 0, and its channel, as before.
std::int64_t boundary_match_tag(const ParallelConfig& parallel, PipelineAction action) {
  constexpr std::int64_t kGradientTag = 1;
  const bool gradient =
      action == PipelineAction::kRecvBackward || action == PipelineAction::kSendBackward;
  return gradient && parallel.pp == 2 && parallel.virtual_stages > 1 ? kGradientTag : 0;
}

bool is_transfer(PipelineAction action) {
  return action == PipelineAction::kRecvForward || action == PipelineAction::kSendForward ||
         action == PipelineAction::kRecvBackward || action == PipelineAction::kSendBackward;
}

}  // namespace

LayerRange stage_layers(const TransformerConfig& model, const ParallelConfig& parallel, int stage,
                        int chunk) {
  const std::vector<int> layers = virtual_stage_layers(model, parallel);
  const int virtual_stage = chunk * parallel.pp + stage;
  int first = 0;
  for (int earlier = 0; earlier < virtual_stage; ++earlier)
    first += layers.at(static_cast<std::size_t>(earlier));
  return {first, first + layers.at(static_cast<std::size_t>(virtual_stage))};
}

namespace {

// A stage template's builder, its header set: its ops not generated yet.
RankTraceBuilder stage_template_builder(const TransformerConfig& model,
                                        const ParallelConfig& parallel, int stage_index) {
  validate(model, parallel);
  if (stage_index < 0 || stage_index >= parallel.pp)
    throw InputError("<parallel>", "stage",
                     "stage " + std::to_string(stage_index) + " is outside the " +
                         std::to_string(parallel.pp) + " pipeline stages");
  RankTraceBuilder builder(0, parallel.world_size(), model.activation_dtype());
  builder.set_fp8_block_scaling(model.fp8() && model.fp8_recipe == Fp8Recipe::kBlockwise);
  Trace& trace = builder.trace();
  trace.source = "generated:" + model.name + " tp" + std::to_string(parallel.tp) +
                 (parallel.cp > 1 ? " cp" + std::to_string(parallel.cp) : std::string()) +
                 (parallel.ep > 1 ? " ep" + std::to_string(parallel.ep) : std::string()) + " pp" +
                 std::to_string(parallel.pp) + " dp" + std::to_string(parallel.dp);
  return builder;
}

// The stage template's ops, into `builder`, flushed after each step of the pipeline schedule
// (one micro-batch's forward or backward of one model chunk, or one transfer) and after each
// phase outside the schedule, so that a streaming builder holds one step's ops at a time.
void emit_stage_template(const TransformerConfig& model, const ParallelConfig& parallel,
                         int stage_index, RankTraceBuilder& builder) {
  const RankRoles roles = placeholder_roles(stage_index);
  StageGenerator stage(model, parallel, roles, builder);
  const int micro_batches = micro_batches_per_iteration(model, parallel);
  std::map<int, TensorRef> received_activations, received_gradients, outputs, input_gradients;
  // Megatron turns overlap_p2p_comm off for the non-interleaved schedule. Without it the
  // interleaved schedule exchanges in Megatron's batches, each followed by a synchronize
  // (batched_interleaved_schedule).
  const bool overlap_p2p = parallel.overlap_p2p_comm && parallel.virtual_stages > 1;
  const bool batched_interleaved = !parallel.overlap_p2p_comm && parallel.virtual_stages > 1;
  // With moe_a2a_overlap Megatron-Core requires the interleaved schedule when PP > 1
  // (validate), and runs PP 1 as combined_1f1b_schedule_for_no_pipelining.
  const bool a2a_overlap = parallel.moe_a2a_overlap;
  std::vector<PipelineStep> steps =
      a2a_overlap && parallel.pp == 1 ? combined_no_pipelining_schedule(micro_batches)
      : parallel.virtual_stages == 1 ? one_f_one_b_schedule(stage_index, parallel.pp, micro_batches)
      : batched_interleaved
          ? batched_interleaved_schedule(stage_index, parallel.pp, parallel.virtual_stages,
                                         micro_batches)
          : interleaved_schedule(stage_index, parallel.pp, parallel.virtual_stages, micro_batches,
                                 a2a_overlap);
  // The flex dispatcher's kernels hold their own SM count (moe_deepep_num_sms /
  // moe_hybridep_num_sms) instead of NCCL's channels.
  const AllToAllContention beside_all_to_all{
      parallel.moe_flex() ? parallel.moe_flex_sms() : parallel.comm_sms,
      kernels::hbm_bytes_per_bus_byte(CollectiveKind::kAllToAllv,
                                      kernels::CommDataPath::kNcclStaged) *
          parallel.bus_rates.ep_GBps,
      parallel.bus_rates.ep_GBps, parallel.gemm_TFLOPs, parallel.hbm_GBps};
  // Where the ops of a combined step's forward and backward start in the builder's unflushed
  // ops (kNone: no combined step open).
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t combined_forward = kNone;
  if (overlap_p2p)
    steps = receives_one_step_ahead(steps);
  stage.gather_parameters_for_forward();
  builder.flush();
  const bool synchronize_p2p =
      parallel.pipeline_p2p_sync && (parallel.virtual_stages == 1 || batched_interleaved);
  for (std::size_t position = 0; position < steps.size(); ++position) {
    const PipelineStep& step = steps[position];
    const int mb = step.chunk * micro_batches + step.micro_batch;  // key per chunk and batch
    builder.set_context(std::string(pipeline_action_name(step.action)), step.micro_batch, -1);
    switch (step.action) {
      case PipelineAction::kRecvForward: {
        TensorRef buffer = stage.stage_boundary_tensor();
        builder.communicate({CollectiveKind::kRecv, "", 2, stage.previous_rank(), kRecvPrevStream,
                             boundary_match_tag(parallel, step.action)},
                            buffer, buffer);
        received_activations[mb] = buffer;
        break;
      }
      case PipelineAction::kForward: {
        std::optional<TensorRef> input;
        if (auto it = received_activations.find(mb); it != received_activations.end())
          input = stage.gather_boundary(it->second);
        if (step.combined)
          combined_forward = builder.trace().ops.size();
        outputs[mb] = stage.forward(step.chunk, step.micro_batch, input);
        received_activations.erase(mb);
        break;
      }
      case PipelineAction::kSendForward:
        builder.communicate({CollectiveKind::kSend, "", 2, stage.next_rank(), kSendNextStream,
                             boundary_match_tag(parallel, step.action)},
                            stage.boundary_to_send(outputs.at(mb)),
                            stage.boundary_to_send(outputs.at(mb)));
        outputs.erase(mb);
        break;
      case PipelineAction::kRecvBackward: {
        TensorRef buffer = stage.stage_boundary_tensor();
        builder.communicate({CollectiveKind::kRecv, "", 2, stage.next_rank(), kRecvNextStream,
                             boundary_match_tag(parallel, step.action)},
                            buffer, buffer);
        received_gradients[mb] = buffer;
        break;
      }
      case PipelineAction::kBackward: {
        std::optional<TensorRef> grad;
        if (auto it = received_gradients.find(mb); it != received_gradients.end())
          grad = stage.gather_boundary(it->second);
        const std::size_t backward_begin = builder.trace().ops.size();
        input_gradients[mb] = stage.backward(step.chunk, step.micro_batch, grad);
        received_gradients.erase(mb);
        if (combined_forward != kNone) {
          interleave_combined_step(builder.trace().ops, combined_forward, backward_begin,
                                   beside_all_to_all);
          combined_forward = kNone;
        } else if (parallel.delay_wgrad_compute) {
          // A backward alone (warm-up's end, cool-down) runs through the same schedule plan
          // with no forward layer: its delayed weight gradients still follow each all-to-all.
          interleave_combined_step(builder.trace().ops, backward_begin, backward_begin,
                                   beside_all_to_all);
        }
        break;
      }
      case PipelineAction::kSendBackward:
        builder.communicate({CollectiveKind::kSend, "", 2, stage.previous_rank(), kSendPrevStream,
                             boundary_match_tag(parallel, step.action)},
                            stage.boundary_to_send(input_gradients.at(mb)),
                            stage.boundary_to_send(input_gradients.at(mb)));
        input_gradients.erase(mb);
        break;
    }
    // One synchronize per batched exchange: after the last transfer of a run of transfers.
    if (synchronize_p2p && is_transfer(step.action) &&
        (position + 1 == steps.size() || !is_transfer(steps[position + 1].action)))
      builder.synchronize_device();
    if (combined_forward == kNone)  // a combined forward's ops wait for its backward's
      builder.flush();
  }
  stage.finish_grad_sync();
  builder.flush();
  stage.allreduce_embedding_gradients();
  builder.flush();
  stage.update_expert_bias();
  builder.flush();
  stage.clip_gradients();
  builder.flush();
  stage.optimizer_step();
  builder.flush();
  stage.declare_persistent_state();
  builder.flush();
}

}  // namespace

StageTemplate generate_llm_stage_template(const TransformerConfig& model,
                                          const ParallelConfig& parallel, int stage_index) {
  RankTraceBuilder builder = stage_template_builder(model, parallel, stage_index);
  emit_stage_template(model, parallel, stage_index, builder);
  return {stage_index, builder.take()};
}

void generate_llm_stage_template(const TransformerConfig& model, const ParallelConfig& parallel,
                                 int stage_index, TraceSink& sink) {
  RankTraceBuilder builder = stage_template_builder(model, parallel, stage_index);
  builder.stream_to(sink);
  emit_stage_template(model, parallel, stage_index, builder);
}

namespace {

// Throws unless `rank` is a rank of pipeline stage `stage`; its roles.
RankRoles roles_in_stage(const ParallelConfig& parallel, int rank, int stage) {
  if (rank < 0 || rank >= parallel.world_size())
    throw InputError("<parallel>", "rank",
                     "rank " + std::to_string(rank) + " is outside the world of " +
                         std::to_string(parallel.world_size()));
  const RankRoles roles = rank_roles(parallel, rank);
  if (roles.stage != stage)
    throw RuntimeFailure("instantiate_llm_rank: rank " + std::to_string(rank) + " is in stage " +
                         std::to_string(roles.stage) + ", the template is stage " +
                         std::to_string(stage) + "'s");
  return roles;
}

// The rank's own fields of a trace whose ops already play its roles.
void set_rank_header(Trace& trace, const ParallelConfig& parallel, int rank) {
  trace.rank = rank;
  trace.source += " rank " + std::to_string(rank);
  trace.process_groups = process_groups_of(parallel, rank);
}

}  // namespace

Trace instantiate_llm_rank(StageTemplate stage_template, const ParallelConfig& parallel, int rank) {
  const RankRoles roles = roles_in_stage(parallel, rank, stage_template.stage);
  Trace trace = std::move(stage_template.trace);
  substitute_roles(trace, roles, trace.source);
  set_rank_header(trace, parallel, rank);
  return trace;
}

StreamedRankInstance::StreamedRankInstance(const Trace& template_header, int stage,
                                           const ParallelConfig& parallel, int rank)
    : roles_(roles_in_stage(parallel, rank, stage)),
      template_source_(template_header.source),
      header_(template_header) {
  header_.ops.clear();
  set_rank_header(header_, parallel, rank);
}

void StreamedRankInstance::substitute(std::span<Op> ops) const {
  substitute_roles(ops, roles_, template_source_);
}

Trace generate_llm_rank(const TransformerConfig& model, const ParallelConfig& parallel, int rank) {
  validate(model, parallel);
  if (rank < 0 || rank >= parallel.world_size())
    throw InputError("<parallel>", "rank",
                     "rank " + std::to_string(rank) + " is outside the world of " +
                         std::to_string(parallel.world_size()));
  return instantiate_llm_rank(
      generate_llm_stage_template(model, parallel, coordinates_of(parallel, rank).pp), parallel,
      rank);
}

std::vector<ProcessGroup> pipeline_peer_groups(const ParallelConfig& parallel) {
  std::vector<ProcessGroup> groups;
  const bool ring = parallel.virtual_stages > 1 && parallel.pp > 2;  // last stage feeds stage 0
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    const RankCoordinates c = coordinates_of(parallel, rank);
    if (c.pp + 1 >= parallel.pp && !(ring && c.pp == parallel.pp - 1))
      continue;
    const int next = rank_of(parallel, {c.tp, c.dp, (c.pp + 1) % parallel.pp, c.cp});
    const std::vector<int> pair{std::min(rank, next), std::max(rank, next)};
    groups.push_back({point_to_point_group_name(rank, next), pair, "pipeline send"});
    groups.push_back({point_to_point_group_name(next, rank), pair, "pipeline send"});
  }
  // The context-parallel rings (with CP 2 the two directions of one pair).
  for (int rank = 0; parallel.cp > 1 && rank < parallel.world_size(); ++rank) {
    const int next = context_ring(parallel, rank).next_rank;
    const std::vector<int> pair{std::min(rank, next), std::max(rank, next)};
    groups.push_back({point_to_point_group_name(rank, next), pair, "context-parallel ring"});
  }
  // The TP rings of userbuffer ring exchange (with TP 2 the two directions of one pair).
  for (int rank = 0; parallel.tp_comm_overlap && parallel.tp > 1 && rank < parallel.world_size();
       ++rank) {
    const int next = rank_roles(parallel, rank).tensor_next;
    const std::vector<int> pair{std::min(rank, next), std::max(rank, next)};
    groups.push_back({point_to_point_group_name(rank, next), pair, "tensor-parallel ring"});
  }
  return groups;
}

}  // namespace perfsim::generators::llm
