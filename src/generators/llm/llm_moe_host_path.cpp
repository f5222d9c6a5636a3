// The host path of a MoE layer (issue 15): what Megatron-Core's alltoall token dispatcher and
// Transformer Engine's GroupedLinear do per layer and micro-batch besides the kernels
// llm_moe_layer.cpp prices, read from their code (Megatron-LM megatron/core/transformer/moe/
// token_dispatcher.py, TransformerEngine transformer_engine/pytorch/module/grouped_linear.py and
// common/gemm/cublaslt_gemm.cu). The rule for their host cost, fixed from the code alone:
// - a call Python makes that launches a kernel or allocates through PyTorch's dispatcher is a
//   generated op (the calibration's per-op cost, as every other generated op);
// - a launch from a C++ loop inside one such call (TE's nvte_multi_stream_cublas_gemm: one
//   cuBLASLt GEMM per local expert) is a host-only op kExpertGemmLaunchOpName, charged the
//   measured launch floor (scenario/llm_calibration.hpp);
// - Python bookkeeping that neither launches nor allocates (quantizer set_usage, cast_if_needed
//   of a bf16 weight, Megatron DDP's per-parameter hook once the wgrad went to main_grad) is not
//   generated.
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {

// MoEAlltoAllTokenDispatcher.preprocess (dropless): routing_map.sum(dim=0); with EP or ETP > 1
// the send splits (a sum per EP rank), the counts all-gathered over the ETP x EP group
// (gather_from_sequence_parallel_region on tp_ep_group), the local experts' slice made
// contiguous and summed per rank, per ETP rank and per local expert. Then
// _maybe_dtoh_and_synchronize copies tokens_per_expert, input_splits, output_splits and
// output_splits_tp to the host (tokens_per_expert alone without EP and ETP), and without
// moe_permute_fusion num_global_tokens_per_local_expert as well.
void LayerEmitter::dispatcher_token_counts(std::int64_t tokens) {
  const std::int64_t experts = shapes_.experts, local = shapes_.experts_local;
  const int ep = ep_.size, etp = ep_.tensor_size;
  const auto sum = [this](const TensorRef& in, std::vector<std::int64_t> shape) {
    const TensorRef out = builder_.tensor(std::move(shape), DType::kInt64);
    builder_.compute("aten::sum", {in}, {out}, KernelCategory::kOther,
                     static_cast<double>(in.numel));
    return out;
  };
  const TensorRef counts = sum(builder_.tensor({tokens, experts}, DType::kBool), {experts});
  // Padded to capacity (drop_and_pad) the splits are known: nothing else, nothing to the host.
  if (moe_switches_.pad_to_capacity)
    return;
  // Dropping without padding: num_out_tokens, the counts' sum, goes to the host as well.
  const TensorRef out_tokens = drops_tokens() ? sum(counts, {1}) : TensorRef{};
  std::vector<TensorRef> to_host{counts};
  if (ep > 1 || etp > 1) {
    const TensorRef input_splits = sum(counts, {ep});
    // perfsim has no ETP x EP group: with both, the gather runs over EP and then over ETP
    // (the same counts arrive; each step is a latency-bound message of a few hundred bytes).
    TensorRef gathered = counts;
    if (ep > 1) {
      const TensorRef out = builder_.tensor({ep, experts}, DType::kInt64);
      builder_.communicate({CollectiveKind::kAllGather, ep_.name, ep, -1, kExpertParallelStream},
                           gathered, out);
      gathered = out;
    }
    if (etp > 1) {
      const TensorRef out = builder_.tensor({etp, ep, experts}, DType::kInt64);
      builder_.communicate(
          {CollectiveKind::kAllGather, ep_.tensor_name, etp, -1, kTensorParallelStream}, gathered,
          out);
      gathered = out;
    }
    const TensorRef local_counts = builder_.tensor({etp, ep, local}, DType::kInt64);
    builder_.compute("aten::clone", {gathered}, {local_counts}, KernelCategory::kMemory, 0);
    const TensorRef per_rank = sum(local_counts, {etp, ep});
    const TensorRef output_splits_tp = sum(per_rank, {etp});
    const TensorRef per_local_expert = sum(local_counts, {local});
    to_host = {per_local_expert, input_splits, RankTraceBuilder::view(per_rank, {ep}),
               output_splits_tp};
    // Without moe_permute_fusion, sort_chunks_by_idxs splits on the host: the per-rank,
    // per-local-expert counts are copied too (when a rank holds more than one expert).
    if (!moe_switches_.permute_fusion && local > 1)
      to_host.push_back(local_counts);
  }
  if (out_tokens.tensor_id >= 0)
    to_host.push_back(out_tokens);
  for (const TensorRef& device_counts : to_host) {
    TensorRef host_counts = builder_.tensor(device_counts.shape, DType::kInt64);
    host_counts.device = "cpu";
    builder_.compute("aten::copy_", {device_counts}, {host_counts}, KernelCategory::kMemory, 0);
  }
}

// cuda_sync_point "before_ep_alltoall" (EP > 1) or "before_finish": d2h_event.synchronize(), so
// that input_splits and the experts' m_splits are host integers. The copies were queued behind
// the compute stream's work, so the host waits for that stream (and for the counts' gather).
void LayerEmitter::dispatcher_wait() {
  builder_.wait_for_compute_stream(std::string(kDispatcherSyncOpName));
}

// te_general_grouped_gemm -> nvte_multi_stream_cublas_gemm: for each GEMM, nvte_cublas_gemm on
// compute stream i % num_streams (descriptors, heuristic query, cublasLtMatmul). The op
// te::grouped_gemm is the Python call and the first launch; these are the others. The GPU side
// is what te::grouped_gemm prices: the experts' GEMMs on TE's 4 streams, four at a time
// (kernels/op_kernel_registry.cpp te_grouped_gemm_rule).
void LayerEmitter::expert_gemm_launches() {
  for (std::int64_t expert = 1; expert < shapes_.experts_local; ++expert)
    builder_.host_call(std::string(kExpertGemmLaunchOpName));
}

// _GroupedLinear.backward after the wgrad GEMMs accumulated into main_grad: for each weight
// handle_custom_ddp_from_mcore sets grad_added_to_main_grad and returns torch.empty of its
// shape (a dummy gradient, no kernel).
void LayerEmitter::expert_dummy_wgrads() {
  for (std::int64_t expert = 0; expert < shapes_.experts_local; ++expert)
    builder_.host_call(std::string(kExpertDummyWgradOpName));
}

}  // namespace perfsim::generators::llm
