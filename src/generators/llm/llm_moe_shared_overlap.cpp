// Megatron-Core's moe_shared_expert_overlap (transformer/moe/shared_experts.py SharedExpertMLP,
// called from the alltoall dispatcher, token_dispatcher.py): the shared experts run on a CUDA
// stream of their own, cut into pieces the dispatcher issues around its all-to-alls, so each
// piece runs while an all-to-all is in flight. The engine starts a collective once the compute
// queued before it is done and an op waits only for the results it reads, so emitting a piece
// right after the all-to-all is posted (before the op that reads its result) runs it beside
// the all-to-all; the piece's compute ops are marked as sharing the GPU with the all-to-all's
// kernel (SMs and HBM traffic; the whole piece: an upper bound, as for TP overlap).
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {

bool LayerEmitter::shared_experts_overlapped() const {
  return shared_overlap_.on && shapes_.shared_ffn_local > 0;
}

TensorRef LayerEmitter::shared_expert_input(const TensorRef& normed, TensorRef* saved_local) {
  // pre_forward_comm: the shared experts' FC1 reads the block's own norm (no LayerNormLinear),
  // gathered over TP with SP; posted before the dispatcher's permute, which runs beside it.
  return gather_linear_input(normed, kAmaxKernelTpReduced, saved_local);
}

void LayerEmitter::shared_expert_fc1_beside(const TensorRef& input, const LayerWeights& weights,
                                            MlpSaved& saved) {
  // linear_fc1_forward_and_act, issued right after the dispatch all-to-all.
  const ContentionScope beside(builder_, shared_overlap_.comm_sms, shared_overlap_.hbm_GBps);
  mlp_fc1_forward(input, weights, shapes_.shared_ffn_local, shapes_.shared_fc1_width,
                  kAmaxKernelTpReduced, false, saved);
}

TensorRef LayerEmitter::shared_expert_fc2_beside(const LayerWeights& weights, MlpSaved& saved) {
  // linear_fc2_forward right after the combine all-to-all, then post_forward_comm: the TP
  // reduction, beside the unpermute.
  {
    const ContentionScope beside(builder_, shared_overlap_.comm_sms, shared_overlap_.hbm_GBps);
    mlp_fc2_forward(weights, shapes_.shared_ffn_local, false, saved);
  }
  return RankTraceBuilder::view(tp_reduce(saved.output),
                                {shapes_.seq_local, shapes_.batch, shapes_.hidden});
}

TensorRef LayerEmitter::shared_expert_fc2_backward_beside(const TensorRef& grad_output,
                                                          const LayerWeights& weights,
                                                          const MlpSaved& saved) {
  // The mirror of the forward: autograd runs each shared-expert op's backward on the stream its
  // forward ran on, fc2's beside the combine's all-to-all backward.
  const TensorRef grad_shared =
      backward_operand(tp_gather(grad_output), shapes_.tokens(), shapes_.hidden, true);
  const ContentionScope beside(builder_, shared_overlap_.comm_sms, shared_overlap_.hbm_GBps);
  return mlp_backward(grad_shared, weights, saved, shapes_.shared_ffn_local);
}

TensorRef LayerEmitter::shared_expert_fc1_backward_beside(const TensorRef& grad_fc1,
                                                          const LayerWeights& weights,
                                                          const ForwardSaved& layer) {
  // fc1's backward beside the dispatch's all-to-all backward, its input gradient's TP
  // reduction beside the permute's backward (the norm's backward, which perfsim runs on the
  // shared experts' share of the gradient, comes with it).
  const ContentionScope beside(builder_, shared_overlap_.comm_sms, shared_overlap_.hbm_GBps);
  return norm_input_backward(grad_fc1, weights.fc1, weights.fc1_fp8, shapes_.shared_fc1_width,
                             layer.x1, layer.ln2, layer.moe.shared.fc1_input_fp8);
}

}  // namespace perfsim::generators::llm
