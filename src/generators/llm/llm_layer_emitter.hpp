#pragma once
// The ops of one transformer layer on one tensor-parallel rank, forward and backward, as
// Megatron-LM runs them: column-parallel QKV and FC1, row-parallel projection and FC2, one
// all-reduce after each row-parallel GEMM (forward) and after each column-parallel input
// gradient (backward); with sequence parallelism all-gather before and reduce-scatter after
// instead, and the input all-gathered again in backward for the weight gradient (Korthikanti
// et al. 2022, Sec. 4.2.2). Also the embedding and the LM head of the end stages.
#include <string>

#include "generators/llm/llm_local_shapes.hpp"
#include "generators/llm/llm_trace_builder.hpp"

namespace perfsim::generators::llm {

// The weight tensors one layer's GEMMs read. With ZeRO-3 they are views of the parameters
// all-gathered for this use, so the GEMMs wait for the all-gather.
struct LayerWeights {
  TensorRef qkv;   // [h, qkv_width]
  TensorRef proj;  // [heads_local * head_dim, h]
  TensorRef fc1;   // [h, fc1_width]
  TensorRef fc2;   // [ffn_local, h]
};

struct TensorParallelGroup {
  std::string name;
  int size = 1;
};

class LayerEmitter {
 public:
  // overlap_tp_backward: the backward TP collectives run under the GEMMs that do not need
  // them (Megatron's asynchronous all-reduce / SP overlap); otherwise each is waited for.
  LayerEmitter(const LocalShapes& shapes, const TransformerConfig& model, Recompute recompute,
               bool overlap_tp_backward, TensorParallelGroup tp, RankTraceBuilder& builder);

  // Fresh weight tensors for one layer (their ids stay the same for every micro-batch).
  LayerWeights make_weights();
  // Views of a flat parameter buffer (ZeRO-3 all-gather output).
  LayerWeights weights_in(const TensorRef& flat_parameters) const;

  // x and the result: [seq_local, batch, hidden].
  TensorRef forward(const TensorRef& x, const LayerWeights& weights);
  // Gradient of the layer output in, gradient of its input out; runs the recomputation the
  // recompute mode asks for first.
  TensorRef backward(const TensorRef& grad_output, const LayerWeights& weights);

  // First stage: vocabulary-parallel embedding, then all-reduce (reduce-scatter with SP).
  TensorRef embedding_forward(const TensorRef& embedding_weight);
  void embedding_backward(const TensorRef& grad_output, const TensorRef& embedding_weight);
  // Last stage: final norm, logits (column-parallel over the vocabulary), vocabulary-parallel
  // cross entropy (three all-reduces of one value per token), and its backward.
  void head_forward(const TensorRef& x, const TensorRef& head_weight);
  TensorRef head_backward(const TensorRef& head_weight);

 private:
  TensorRef activation(std::vector<std::int64_t> shape) {
    return builder_.tensor(std::move(shape));
  }
  TensorRef hidden_local() {
    return activation({shapes_.seq_local, shapes_.batch, shapes_.hidden});
  }
  TensorRef hidden_full() { return activation({shapes_.seq, shapes_.batch, shapes_.hidden}); }
  TensorRef mm(const TensorRef& a, const TensorRef& b, std::int64_t m, std::int64_t k,
               std::int64_t n);
  TensorRef bmm(const TensorRef& a, const TensorRef& b, std::int64_t batch, std::int64_t m,
                std::int64_t k, std::int64_t n);
  TensorRef elementwise(const std::string& op, std::vector<TensorRef> inputs,
                        std::vector<std::int64_t> out_shape, double flops_per_element,
                        DType out_dtype = DType::kUnknown);
  TensorRef dropout(const TensorRef& x);
  TensorRef dropout_backward(const TensorRef& grad);
  // TP collectives (no-ops when TP = 1). gather: [seq_local] -> [seq] with SP, identity
  // without; reduce: [seq] -> all-reduced [seq] without SP, reduce-scattered [seq_local] with.
  TensorRef tp_gather(const TensorRef& local);
  TensorRef tp_reduce(const TensorRef& full);
  // Backward of norm -> column-parallel linear: data gradient (reduced over TP), weight
  // gradient, norm backward; returns the gradient of the norm's input.
  TensorRef norm_input_backward(const TensorRef& grad_output, const TensorRef& weight,
                                std::int64_t width);
  TensorRef attention_core_forward(const TensorRef& qkv);
  TensorRef attention_core_backward(const TensorRef& grad_context);
  struct ForwardSaved {
    TensorRef x, ln1, qkv, context, x1, ln2, fc1, act, output;
  };
  ForwardSaved run_forward(const TensorRef& x, const LayerWeights& weights);

  LocalShapes shapes_;
  const TransformerConfig& model_;
  Recompute recompute_;
  bool overlap_tp_backward_;
  TensorParallelGroup tp_;
  RankTraceBuilder& builder_;
};

}  // namespace perfsim::generators::llm
