#include "kernels/op_kernel_registry.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>

#include "kernels/cnn_op_rules.hpp"
#include "kernels/fp8_block_scaling.hpp"
#include "kernels/tensor_facts.hpp"

namespace perfsim::kernels {
namespace {

using Rule = std::function<OpExpansion(const Op&)>;

OpExpansion modeled(std::vector<KernelSpec> kernels) {
  return {ExpansionStatus::kModeled, std::move(kernels), ""};
}
OpExpansion missing(std::string note, KernelCategory category = KernelCategory::kOther) {
  return {ExpansionStatus::kMissingShapes, {}, std::move(note), category};
}
OpExpansion status_only(ExpansionStatus status) {
  return {status, {}, ""};
}

// Kineto lists a scalar argument with empty dims and type "Scalar" (no dtype), a 0-dim
// tensor with empty dims and its dtype.
bool is_tensor(const TensorRef& tensor) {
  return !tensor.shape.empty() || tensor.dtype != DType::kUnknown || tensor.numel > 0;
}

// Inputs that are tensors with at least one element.
std::vector<const TensorRef*> tensor_inputs(const Op& op) {
  std::vector<const TensorRef*> out;
  for (const TensorRef& tensor : op.inputs) {
    if (is_tensor(tensor) && tensor_elements(tensor) > 0)
      out.push_back(&tensor);
  }
  return out;
}

const TensorRef* input_at(const Op& op, std::size_t index) {
  if (index >= op.inputs.size() || !is_tensor(op.inputs[index]))
    return nullptr;
  return &op.inputs[index];
}

std::int64_t leading_product(const std::vector<std::int64_t>& shape, std::size_t keep_last) {
  std::int64_t product = 1;
  for (std::size_t i = 0; i + keep_last < shape.size(); ++i)
    product *= shape[i];
  return product;
}

// Whether an FP8 GEMM keeps an FP32-promoted (split) accumulator: Transformer Engine runs its
// dgrad and wgrad GEMMs so (_2X_ACC_DGRAD and _2X_ACC_WGRAD), the fprop ones with fast
// accumulation. Generated traces mark backward ops with the "phase" attribute
// (generators/llm/llm_trace_builder.hpp); recomputed forwards say "recompute".
bool backward_phase(const Op& op) {
  const Attribute* phase = op.find_attribute("phase");
  const std::string* name = phase ? std::get_if<std::string>(&phase->value) : nullptr;
  return name != nullptr && *name == "backward";
}

// Block-scaled FP8 GEMMs (kFp8BlockScalingAttribute) promote every partial sum in FP32 after
// scaling it, in every phase: the split accumulator's main-loop cost, forward too.
bool block_scaled(const Op& op) {
  const Attribute* scaling = op.find_attribute(kFp8BlockScalingAttribute);
  const std::int64_t* on = scaling ? std::get_if<std::int64_t>(&scaling->value) : nullptr;
  return on != nullptr && *on != 0;
}

// GEMM kernels are timed by the dtype their operands carry.
KernelSpec gemm_kernel(const Op& op, std::int64_t m, std::int64_t n, std::int64_t k,
                       std::int64_t batch, DType dtype) {
  return {"gemm:" + std::string(canonical_op_name(op.name)), KernelCategory::kGemm,
          GemmWork{m, n, k, batch, dtype,
                   dtype == DType::kFloat8 && (backward_phase(op) || block_scaled(op))}};
}

// A [m, k] x B [k, n] at inputs (a, b).
OpExpansion matrix_product(const Op& op, std::size_t a_index, std::size_t b_index) {
  const TensorRef* a = input_at(op, a_index);
  const TensorRef* b = input_at(op, b_index);
  if (!a || !b || a->shape.size() < 2 || b->shape.size() < 2)
    return missing("needs two matrix operands at inputs " + std::to_string(a_index) + " and " +
                   std::to_string(b_index));
  const std::size_t ra = a->shape.size();
  const std::size_t rb = b->shape.size();
  const std::int64_t batch = ra > 2 ? leading_product(a->shape, 2) : 1;
  return modeled({gemm_kernel(op, a->shape[ra - 2], b->shape[rb - 1], a->shape[ra - 1], batch,
                              tensor_dtype(*a))});
}

// Transformer Engine's grouped GEMM ([experts, m, k] x [experts, k, n]) on Hopper and earlier:
// nvte_multi_tensor_gemm without NVTE_USE_CUTLASS_GROUPED_GEMM takes multi_stream_cublas_gemm,
// one cuBLAS GEMM per expert, expert i on compute stream i % num_streams (4). At most four
// GEMMs run at once: each round of four shares the SMs as a batched GEMM of four does, and the
// rounds follow one another on the streams. One kernel spec per round.
constexpr std::int64_t kTeGroupedGemmStreams = 4;

OpExpansion te_grouped_gemm_rule(const Op& op) {
  OpExpansion batched = matrix_product(op, 0, 1);
  if (batched.status != ExpansionStatus::kModeled)
    return batched;
  const KernelSpec all = batched.kernels.front();
  const GemmWork& work = std::get<GemmWork>(all.work);
  std::vector<KernelSpec> rounds;
  for (std::int64_t first = 0; first < work.batch; first += kTeGroupedGemmStreams) {
    KernelSpec round = all;
    std::get<GemmWork>(round.work).batch = std::min(kTeGroupedGemmStreams, work.batch - first);
    rounds.push_back(std::move(round));
  }
  return modeled(std::move(rounds));
}

OpExpansion linear_rule(const Op& op) {
  const TensorRef* input = input_at(op, 0);
  const TensorRef* weight = input_at(op, 1);
  if (!input || !weight || weight->shape.size() != 2)
    return missing("needs input [..., in] and weight [out, in]");
  const std::int64_t m = leading_product(input->shape, 1);
  return modeled({gemm_kernel(op, m, weight->shape[0], weight->shape[1], 1, tensor_dtype(*input))});
}

OpExpansion matmul_rule(const Op& op) {
  const TensorRef* a = input_at(op, 0);
  const TensorRef* b = input_at(op, 1);
  if (!a || !b)
    return missing("needs two operands");
  if (b->shape.size() == 2 && a->shape.size() >= 2) {  // folds leading dims of A into m
    return modeled({gemm_kernel(op, leading_product(a->shape, 1), b->shape[1], b->shape[0], 1,
                                tensor_dtype(*a))});
  }
  return matrix_product(op, 0, 1);
}

// Element-wise: read every tensor input, write an output the size of the largest input.
Rule elementwise(double flops_per_element, double extra_output_bytes_per_element = 0) {
  return [=](const Op& op) -> OpExpansion {
    std::vector<const TensorRef*> inputs = tensor_inputs(op);
    if (inputs.empty())
      return missing("no tensor input with a shape");
    ElementwiseWork work;
    double elements = 0;
    for (const TensorRef* tensor : inputs) {
      work.bytes_read += tensor_bytes(*tensor);
      if (static_cast<double>(tensor_elements(*tensor)) > elements) {
        elements = static_cast<double>(tensor_elements(*tensor));
        work.dtype = tensor_dtype(*tensor);
      }
    }
    const std::vector<TensorRef>& outs = op.outputs;
    double written = 0;
    for (const TensorRef& out : outs)
      written += tensor_bytes(out);
    if (written == 0)
      written = elements * std::max(1, element_bytes(work.dtype));
    work.bytes_written = written + extra_output_bytes_per_element * elements;
    work.flops = flops_per_element * elements;
    return modeled(
        {{"elementwise:" + std::string(canonical_op_name(op.name)), KernelCategory::kOther, work}});
  };
}

// Reductions (sum, mean): read the input, write the (small) output.
OpExpansion reduction_rule(const Op& op) {
  const TensorRef* input = input_at(op, 0);
  if (!input)
    return missing("needs the reduced tensor");
  ElementwiseWork work{static_cast<double>(tensor_elements(*input)), tensor_bytes(*input), 0,
                       tensor_dtype(*input)};
  for (const TensorRef& out : op.outputs)
    work.bytes_written += tensor_bytes(out);
  return modeled(
      {{"reduce:" + std::string(canonical_op_name(op.name)), KernelCategory::kOther, work}});
}

// A device copy kernel: read and write the tensor once.
KernelSpec device_copy(const Op& op, double bytes, DType dtype) {
  return {"copy_kernel:" + std::string(canonical_op_name(op.name)), KernelCategory::kMemory,
          ElementwiseWork{0, bytes, bytes, dtype}};
}

OpExpansion copy_rule(const Op& op) {  // aten::copy_(dst, src)
  const TensorRef* dst = input_at(op, 0);
  const TensorRef* src = input_at(op, 1);
  if (!dst || !src)
    return missing("needs destination and source tensors");
  const bool src_host = tensor_on_host(*src);
  const bool dst_host = tensor_on_host(*dst);
  if (src_host && dst_host)
    return status_only(ExpansionStatus::kNoKernel);
  if (src_host || dst_host) {
    return modeled({{src_host ? "Memcpy HtoD" : "Memcpy DtoH", KernelCategory::kMemory,
                     HostTransferWork{tensor_bytes(*src)}}});
  }
  return modeled({device_copy(op, tensor_bytes(*dst), tensor_dtype(*dst))});
}

// Tensor.item(): a one-element device-to-host copy when the tensor is on the GPU.
OpExpansion local_scalar_rule(const Op& op) {
  const TensorRef* source = input_at(op, 0);
  if (!source || source->device.empty())
    return missing("needs the tensor's device (cpu: no kernel; cuda: a device-to-host copy)",
                   KernelCategory::kMemory);
  if (tensor_on_host(*source))
    return status_only(ExpansionStatus::kNoKernel);
  return modeled({{"Memcpy DtoH", KernelCategory::kMemory,
                   HostTransferWork{static_cast<double>(tensor_element_bytes(*source))}}});
}

OpExpansion clone_rule(const Op& op) {
  const TensorRef* src = input_at(op, 0);
  if (!src)
    return missing("needs the copied tensor");
  return modeled({device_copy(op, tensor_bytes(*src), tensor_dtype(*src))});
}

OpExpansion cat_rule(const Op& op) {
  double bytes = 0;
  DType dtype = DType::kFloat32;
  for (const TensorRef& out : op.outputs) {
    bytes += tensor_bytes(out);
    dtype = tensor_dtype(out);
  }
  if (bytes == 0) {
    for (const TensorRef* in : tensor_inputs(op)) {
      bytes += tensor_bytes(*in);
      dtype = tensor_dtype(*in);
    }
  }
  if (bytes == 0)
    return missing("needs the concatenated tensors or the output", KernelCategory::kMemory);
  return modeled({{"CatArrayBatchedCopy:" + std::string(canonical_op_name(op.name)),
                   KernelCategory::kMemory, ElementwiseWork{0, bytes, bytes, dtype}}});
}

OpExpansion fill_rule(const Op& op) {  // fill_, zero_: write the tensor once
  const TensorRef* target = input_at(op, 0);
  if (!target)
    return missing("needs the filled tensor");
  return modeled(
      {{"fill_kernel:" + std::string(canonical_op_name(op.name)), KernelCategory::kMemory,
        ElementwiseWork{0, 0, tensor_bytes(*target), tensor_dtype(*target)}}});
}

OpExpansion embedding_kernel(const Op& op, EmbeddingWork work) {
  return modeled({{std::string(work.backward ? "embedding_backward:" : "embedding_forward:") +
                       std::string(canonical_op_name(op.name)),
                   KernelCategory::kEmbeddingLookup, work}});
}

// FBGEMM ops run their lookup kernels next to child ops that allocate and zero buffers.
OpExpansion besides_children(OpExpansion expansion) {
  expansion.own_kernels_besides_children = true;
  return expansion;
}

// aten::embedding_bag(weight [E, D], indices [N], offsets [B or B+1], ...).
OpExpansion embedding_bag_rule(const Op& op) {
  const TensorRef* weight = input_at(op, 0);
  const TensorRef* indices = input_at(op, 1);
  const TensorRef* offsets = input_at(op, 2);
  if (!weight || !indices || !offsets || weight->shape.size() != 2)
    return missing("needs weight [E, D], indices and offsets", KernelCategory::kEmbeddingLookup);
  EmbeddingWork work;
  work.rows = weight->shape[0];
  work.dim = weight->shape[1];
  work.batch_size = std::max<std::int64_t>(1, tensor_elements(*offsets) - 1);
  work.dtype = tensor_dtype(*weight);
  work.pooling_factor =
      static_cast<double>(tensor_elements(*indices)) / static_cast<double>(work.batch_size);
  return embedding_kernel(op, work);
}

// aten::_embedding_bag_backward(grad [B, D], indices [N], offsets [B or B+1], ...) -> the
// weight gradient [E, D] (dense mode; the generated DLRM fuses the sparse update into it, as
// FBGEMM's backward kernels do).
OpExpansion embedding_bag_backward_rule(const Op& op) {
  const TensorRef* grad = input_at(op, 0);
  const TensorRef* indices = input_at(op, 1);
  const TensorRef* offsets = input_at(op, 2);
  if (!grad || !indices || !offsets || op.outputs.empty() || op.outputs[0].shape.size() != 2)
    return missing("needs grad [B, D], indices, offsets and the weight gradient [E, D]",
                   KernelCategory::kEmbeddingLookup);
  EmbeddingWork work;
  work.rows = op.outputs[0].shape[0];
  work.dim = op.outputs[0].shape[1];
  work.batch_size = std::max<std::int64_t>(1, tensor_elements(*offsets) - 1);
  work.dtype = tensor_dtype(op.outputs[0]);
  work.pooling_factor =
      static_cast<double>(tensor_elements(*indices)) / static_cast<double>(work.batch_size);
  work.backward = true;
  return embedding_kernel(op, work);
}

// aten::embedding(weight [E, D], indices [...]): one lookup per index.
OpExpansion embedding_rule(const Op& op) {
  const TensorRef* weight = input_at(op, 0);
  const TensorRef* indices = input_at(op, 1);
  if (!weight || !indices || weight->shape.size() != 2)
    return missing("needs weight [E, D] and indices", KernelCategory::kEmbeddingLookup);
  EmbeddingWork work;
  work.rows = weight->shape[0];
  work.dim = weight->shape[1];
  work.batch_size = tensor_elements(*indices);
  work.pooling_factor = 1;
  work.dtype = tensor_dtype(*weight);
  return embedding_kernel(op, work);
}

// FBGEMM batched lookups: output [B, sum of D over T tables], 1-D weights holding all tables,
// int indices, and offsets of T*B+1. The output shape is required: the inputs alone do not
// give D.
OpExpansion fbgemm_lookup_rule(const Op& op) {
  if (op.outputs.empty() || op.outputs[0].shape.size() != 2)
    return missing(
        "FBGEMM lookup needs its output shape [B, sum D] (execution traces have it, "
        "Kineto does not)",
        KernelCategory::kEmbeddingLookup);
  const std::int64_t batch = op.outputs[0].shape[0];
  const std::int64_t total_dim = op.outputs[0].shape[1];
  const TensorRef* weights = nullptr;
  std::vector<const TensorRef*> int_vectors;
  for (const TensorRef& tensor : op.inputs) {
    if (tensor.shape.size() != 1 || tensor_elements(tensor) <= 0)
      continue;
    if (is_floating(tensor_dtype(tensor))) {
      if (!weights || tensor_elements(tensor) > tensor_elements(*weights))
        weights = &tensor;
    } else {
      int_vectors.push_back(&tensor);
    }
  }
  const TensorRef* offsets = nullptr;
  const TensorRef* indices = nullptr;
  for (const TensorRef* tensor : int_vectors) {
    const std::int64_t n = tensor_elements(*tensor);
    if (batch > 0 && (n - 1) % batch == 0 && n > 1 && (!offsets || n > tensor_elements(*offsets)))
      offsets = tensor;
  }
  for (const TensorRef* tensor : int_vectors) {
    if (tensor != offsets && (!indices || tensor_elements(*tensor) > tensor_elements(*indices)))
      indices = tensor;
  }
  if (!weights || !offsets || !indices || batch <= 0)
    return missing("FBGEMM lookup: cannot find weights, indices and offsets among the inputs",
                   KernelCategory::kEmbeddingLookup);
  EmbeddingWork work;
  work.batch_size = batch;
  work.tables = std::max<std::int64_t>(1, (tensor_elements(*offsets) - 1) / batch);
  work.dim = std::max<std::int64_t>(1, total_dim / work.tables);
  work.pooling_factor =
      static_cast<double>(tensor_elements(*indices)) / static_cast<double>(batch * work.tables);
  work.rows = std::max<std::int64_t>(1, tensor_elements(*weights) / (work.tables * work.dim));
  work.dtype = tensor_dtype(*weights);
  return embedding_kernel(op, work);
}

// Fused attention (Q [b, h, s, d], K [b, h, s_k, d], V): QK^T and AV in one kernel of 4 s s_k d
// flops per head; the backward does 2.5 times the forward's matmuls. The op's "is_causal"
// attribute (PyTorch's is_causal argument; 0 when absent) halves the work, a "window_size"
// attribute narrows it to the band (kernels/attention_model.hpp).
Rule attention_rule(bool backward) {
  return [=](const Op& op) -> OpExpansion {
    const std::size_t offset = backward ? 1 : 0;  // backward ops start with grad_out
    const TensorRef* q = input_at(op, offset);
    const TensorRef* k = input_at(op, offset + 1);
    if (!q || !k || q->shape.size() != 4 || k->shape.size() != 4)
      return missing("needs query and key of rank 4 [batch, heads, seq, head_dim]");
    const Attribute* causal = op.find_attribute("is_causal");
    const std::int64_t* causal_flag = causal ? std::get_if<std::int64_t>(&causal->value) : nullptr;
    // "window_size" (flash-attn's left window, as keys per query including the query's own;
    // absent or 0: none) narrows a causal kernel to the band.
    const Attribute* window = op.find_attribute("window_size");
    const std::int64_t* window_keys = window ? std::get_if<std::int64_t>(&window->value) : nullptr;
    // V's head dimension, when it differs from Q's and K's (multi-latent attention).
    const TensorRef* v = input_at(op, offset + 2);
    const std::int64_t v_head_dim =
        v && v->shape.size() == 4 && v->shape[3] != q->shape[3] ? v->shape[3] : 0;
    KernelSpec kernel{
        std::string(backward ? "flash_attention_backward:" : "flash_attention_forward:") +
            std::string(canonical_op_name(op.name)),
        KernelCategory::kGemm,
        AttentionWork{q->shape[0] * q->shape[1], q->shape[2], k->shape[2], q->shape[3],
                      causal_flag != nullptr && *causal_flag != 0, backward, tensor_dtype(*q),
                      window_keys != nullptr && *window_keys > 0 ? *window_keys : 0, v_head_dim}};
    return modeled({kernel});
  };
}

OpExpansion no_kernel(const Op&) {
  return status_only(ExpansionStatus::kNoKernel);
}
OpExpansion composite(const Op&) {
  return status_only(ExpansionStatus::kComposite);
}
OpExpansion backward_node(const Op&) {
  return missing("autograd node: its kernels come from child ops, which the trace lacks");
}
OpExpansion communication(const Op&) {
  return status_only(ExpansionStatus::kCommunication);
}

const std::map<std::string, Rule, std::less<>>& rules() {
  static const std::map<std::string, Rule, std::less<>> table = [] {
    std::map<std::string, Rule, std::less<>> t;
    auto product = [](std::size_t a, std::size_t b) {
      return [=](const Op& op) { return matrix_product(op, a, b); };
    };
    // GEMM
    t["aten::mm"] = product(0, 1);
    t["aten::bmm"] = product(0, 1);
    t["aten::addmm"] = product(1, 2);
    t["aten::baddbmm"] = product(1, 2);
    t["aten::addbmm"] = product(1, 2);
    t["aten::linear"] = linear_rule;
    t["aten::matmul"] = matmul_rule;
    // Backward nodes of GEMM ops launch their kernels through aten::mm children.
    // Without children the trace lacks what they launched.
    for (const char* name : {"AddmmBackward0", "MmBackward0", "BmmBackward0", "LinearBackward0",
                             "MmBackward", "AddmmBackward", "BaddbmmBackward0"})
      t[name] = backward_node;
    for (const char* name :
         {"torch::autograd::AccumulateGrad", "AccumulateGrad", "SumBackward0", "SumBackward1",
          "MeanBackward1", "SqueezeBackward1", "ThresholdBackward0", "ReluBackward0",
          "SigmoidBackward0", "TanhBackward0", "GeluBackward0", "NativeLayerNormBackward0",
          "NativeDropoutBackward0", "SoftmaxBackward0", "MulBackward0", "AddBackward0",
          "DivBackward0", "IndexBackward0"})
      t[name] = composite;
    // Embedding lookups
    t["aten::embedding_bag"] = embedding_bag_rule;
    t["aten::_embedding_bag"] = embedding_bag_rule;
    t["aten::embedding"] = embedding_rule;
    t["aten::_embedding_bag_backward"] = embedding_bag_backward_rule;
    auto fbgemm_lookup = [](const Op& op) { return besides_children(fbgemm_lookup_rule(op)); };
    t["fbgemm::split_embedding_codegen_lookup_sgd_function"] = fbgemm_lookup;
    t["fbgemm::split_embedding_codegen_lookup_adagrad_function"] = fbgemm_lookup;
    t["fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function"] = fbgemm_lookup;
    t["fbgemm::split_embedding_codegen_lookup_adam_function"] = fbgemm_lookup;
    t["fbgemm::dense_embedding_codegen_lookup_function"] = fbgemm_lookup;
    // FBGEMM backward nodes record only the output gradient: E and L cannot be recovered.
    for (const char* name : {"torch::autograd::CppNode<SplitLookupFunction_sgd_Op>",
                             "torch::autograd::CppNode<SplitLookupFunction_adagrad_Op>",
                             "torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op>",
                             "torch::autograd::CppNode<SplitLookupFunction_adam_Op>",
                             "torch::autograd::CppNode<SplitLookupFunction_Dense_Op>"})
      t[name] = [](const Op&) {
        return besides_children(
            missing("FBGEMM backward: the trace records the gradient only, not the indices",
                    KernelCategory::kEmbeddingLookup));
      };
    // Memory
    t["aten::copy_"] = copy_rule;
    t["aten::clone"] = clone_rule;
    t["aten::_local_scalar_dense"] = local_scalar_rule;
    t["aten::cat"] = cat_rule;
    t["aten::concat"] = cat_rule;
    t["All2All_Pooled_Req"] = composite;  // torchrec wrapper around an all-to-all
    t["aten::fill_"] = fill_rule;
    t["aten::zero_"] = fill_rule;
    // Composite ops whose kernels (if any) are those of their children: with no child they
    // launched nothing (contiguous on a contiguous tensor, to() to the same dtype and device).
    for (const char* name :
         {"aten::to", "aten::_to_copy", "aten::contiguous", "aten::reshape", "aten::zeros",
          "aten::zeros_like", "aten::ones", "aten::ones_like", "aten::flatten", "aten::type_as"})
      t[name] = composite;
    // Composite ops that always do work: used when the trace has no children for them.
    t["aten::layer_norm"] = elementwise(8);
    t["aten::dropout"] = elementwise(2, /*mask bytes*/ 1);
    t["aten::softmax"] = elementwise(5);
    t["aten::scaled_dot_product_attention"] = attention_rule(false);
    // Views, allocations and host-side ops: no kernel.
    for (const char* name :
         {"aten::view", "aten::_unsafe_view", "aten::as_strided", "aten::slice", "aten::narrow",
          "aten::select", "aten::t", "aten::transpose", "aten::permute", "aten::expand",
          "aten::unsqueeze", "aten::squeeze", "aten::_reshape_alias", "aten::detach",
          "aten::detach_", "detach", "detach_", "aten::alias", "aten::split",
          "aten::split_with_sizes", "aten::chunk", "aten::unbind", "aten::empty",
          "aten::empty_strided", "aten::empty_like", "aten::lift_fresh", "aten::resolve_conj",
          "aten::resolve_neg", "aten::set_", "aten::record_stream", "aten::is_pinned",
          "aten::pin_memory", "aten::_pin_memory", "aten::result_type", "aten::numpy_T",
          "aten::item", "aten::new_empty", "aten::resize_", "TBackward0", "ViewBackward0",
          "UnsafeViewBackward0", "ReshapeAliasBackward0", "TransposeBackward0", "PermuteBackward0",
          "ExpandBackward0", "SliceBackward0", "SplitBackward0", "SqueezeBackward0",
          "UnsqueezeBackward0", "CatBackward0", "SplitWithSizesBackward0",
          // Host-only steps of generated traces (a synchronize, a batch load)
          "torch.cuda.synchronize", "megatron.get_batch"})
      t[name] = no_kernel;
    // Element-wise (flops per output element) and normalization ops.
    for (const char* name : {"aten::relu",
                             "aten::relu_",
                             "aten::clamp_min",
                             "aten::clamp_min_",
                             "aten::threshold_backward",
                             "aten::add",
                             "aten::add_",
                             "aten::sub",
                             "aten::sub_",
                             "aten::mul",
                             "aten::mul_",
                             "aten::div",
                             "aten::div_",
                             "aten::neg",
                             "aten::sqrt",
                             "aten::rsqrt",
                             "aten::exp",
                             "aten::exp_",
                             "aten::log",
                             "aten::log_",
                             "aten::abs",
                             "aten::clamp",
                             "aten::remainder",
                             "aten::masked_fill_",
                             "aten::where",
                             "aten::_foreach_add_",
                             "aten::_foreach_mul_",
                             "aten::lerp_"})
      t[name] = elementwise(1);
    t["aten::addcmul_"] = elementwise(2);
    t["aten::addcdiv_"] = elementwise(3);
    t["aten::sigmoid"] = elementwise(4);
    t["aten::sigmoid_backward"] = elementwise(3);
    t["aten::tanh"] = elementwise(6);
    t["aten::tanh_backward"] = elementwise(3);
    t["aten::gelu"] = elementwise(8);
    t["aten::gelu_backward"] = elementwise(12);
    t["aten::pow"] = elementwise(2);
    t["aten::_softmax"] = elementwise(5);
    t["aten::_softmax_backward_data"] = elementwise(3);
    t["aten::_log_softmax"] = elementwise(5);
    t["aten::_log_softmax_backward_data"] = elementwise(3);
    t["aten::native_dropout"] = elementwise(2, /*mask bytes*/ 1);
    t["aten::native_dropout_backward"] = elementwise(1);
    t["aten::native_layer_norm"] = elementwise(8);
    t["aten::native_layer_norm_backward"] = elementwise(12);
    // Transformer Engine FP8: the fused cast + transpose + amax kernel reads the bf16 tensor
    // and writes its FP8 copy and transpose (both listed as outputs).
    t["te::cast_transpose"] = elementwise(2);
    // FP8 current scaling (generators/llm/llm_fp8_current_scaling.cpp): the amax kernel reads
    // the tensor once into one float; the scale kernel is one thread's work on that float.
    t["te::compute_amax"] = reduction_rule;
    t["te::compute_scale_from_amax"] = elementwise(1);
    // FP8 primary weights (fp8_param_gather): the step's cast of fp32 main weights into the
    // E4M3 weights (reads 4 bytes, writes 1 per element), the transpose of an E4M3 weight
    // after its gather, and the optimizer's multi-tensor kernels over one float per weight.
    t["te::cast_master_weight_to_fp8"] = elementwise(2);
    t["te::fp8_transpose"] = elementwise(0);
    t["te::multi_tensor_scale"] = elementwise(1);
    // FP8 delayed scaling: the reduced amaxes into the history, scales and inverse scales.
    t["te::fused_amax_and_scale_update_after_reduction"] = elementwise(3);
    t["te::multi_tensor_compute_scale_and_scale_inv"] = elementwise(2);
    t["aten::reciprocal"] = elementwise(1);
    // Megatron-Core's fused element-wise kernels (generators/llm, issue 15): SwiGLU (reads gate
    // and up, writes the product; backward reads gradient and input, writes both gradients) and
    // Transformer Engine's rotary embedding over q or k.
    t["megatron::bias_swiglu"] = elementwise(6);
    t["megatron::bias_swiglu_backward"] = elementwise(5);
    t["te::fused_rope"] = elementwise(3);
    t["te::fused_rope_backward"] = elementwise(3);
    // Megatron-Core's fused vocabulary-parallel cross entropy (native jit fusion): the cast to
    // fp32 with the row max; subtract, exp and row sum in one pass; the division.
    t["megatron::fused_ce_logits_max"] = elementwise(1);
    t["megatron::fused_ce_predicted_logits"] = elementwise(3);
    t["megatron::fused_ce_loss"] = elementwise(1);
    // Transformer Engine's Triton cross entropy: online softmax over the bf16 logits (max and
    // exp-sum per token), the loss and in-place gradient pass, the backward's scaling.
    t["te::cross_entropy_online_softmax"] = elementwise(3);
    t["te::cross_entropy_loss_grad"] = elementwise(3);
    t["te::cross_entropy_grad_scale"] = elementwise(1);
    // Megatron-Core's fused MLA rotary kernels (fused_mla_yarn_rope_apply.py): the query's
    // rope part rotated in place of a copy of q; the key built from the kv up projection's
    // nope part and the rotated shared k_pe, the value copied out; backward the reverse.
    t["megatron::fused_mla_rope_q"] = elementwise(3);
    t["megatron::fused_mla_rope_q_backward"] = elementwise(3);
    t["megatron::fused_mla_rope_kv"] = elementwise(3);
    t["megatron::fused_mla_rope_kv_backward"] = elementwise(3);
    // Mixture of experts (generators/llm/llm_moe_layer.cpp): Transformer Engine's grouped GEMM
    // over the local experts, [experts, m, k] x [experts, k, n], in rounds of four concurrent
    // GEMMs (te_grouped_gemm_rule); the token permutation kernels and the router's top-k are
    // memory-bound passes over their tensors.
    t["te::grouped_gemm"] = te_grouped_gemm_rule;
    t["te::moe_permute"] = elementwise(0);
    t["te::moe_sort_chunks_by_index"] = elementwise(0);
    t["te::moe_unpermute"] = elementwise(2);
    t["te::moe_unpermute_backward"] = elementwise(2);
    t["aten::topk"] = elementwise(2);
    t["aten::sum"] = reduction_rule;
    t["aten::amax"] = reduction_rule;
    t["aten::max"] = reduction_rule;
    t["aten::cumsum"] = elementwise(1);
    t["aten::mean"] = reduction_rule;
    t["aten::linalg_vector_norm"] = reduction_rule;
    // Attention
    t["aten::_scaled_dot_product_flash_attention"] = attention_rule(false);
    t["aten::_scaled_dot_product_efficient_attention"] = attention_rule(false);
    t["aten::_flash_attention_forward"] = attention_rule(false);
    t["aten::_scaled_dot_product_flash_attention_backward"] = attention_rule(true);
    t["aten::_scaled_dot_product_efficient_attention_backward"] = attention_rule(true);
    t["aten::_flash_attention_backward"] = attention_rule(true);
    // Convolutions, batch-norm, pooling (kernels/cnn_op_rules.hpp).
    for (const auto& [name, rule] : cnn_op_rules())
      t[std::string(name)] = rule;
    // Communication: the collective models time these.
    for (const char* name :
         {"record_param_comms", "nccl:all_reduce", "nccl:all_to_all", "nccl:all_gather",
          "nccl:reduce_scatter", "nccl:broadcast", "nccl:send", "nccl:recv", "c10d::allreduce_",
          "c10d::alltoall_base_", "c10d::allgather_", "c10d::_allgather_base_",
          "c10d::reduce_scatter_", "c10d::_reduce_scatter_base_", "c10d::broadcast_", "c10d::send",
          "c10d::recv_", "c10d::barrier", "c10d::wait"})
      t[name] = communication;
    return t;
  }();
  return table;
}

}  // namespace

std::string_view expansion_status_name(ExpansionStatus status) {
  switch (status) {
    case ExpansionStatus::kModeled:
      return "modeled";
    case ExpansionStatus::kNoKernel:
      return "no-kernel";
    case ExpansionStatus::kComposite:
      return "composite";
    case ExpansionStatus::kCommunication:
      return "communication";
    case ExpansionStatus::kMissingShapes:
      return "missing-shapes";
    case ExpansionStatus::kUnknownOp:
      return "unknown-op";
  }
  return "unknown-op";
}

std::string_view canonical_op_name(std::string_view op_name) {
  constexpr std::string_view kAutogradWrapper = "autograd::engine::evaluate_function: ";
  if (op_name.substr(0, kAutogradWrapper.size()) == kAutogradWrapper)
    op_name.remove_prefix(kAutogradWrapper.size());
  return op_name;
}

OpExpansion expand_op(const Op& op) {
  const std::string_view name = canonical_op_name(op.name);
  // "## label ##": record_function scopes a model adds around groups of ops (DLRM).
  if (name.size() >= 4 && name.substr(0, 2) == "##" && name.substr(name.size() - 2) == "##")
    return status_only(ExpansionStatus::kComposite);
  const auto& table = rules();
  auto it = table.find(name);
  if (it == table.end())
    return {ExpansionStatus::kUnknownOp, {}, "no rule for this op"};
  return it->second(op);
}

std::vector<std::string> registered_op_names() {
  std::vector<std::string> names;
  for (const auto& [name, rule] : rules())
    names.push_back(name);
  return names;
}

}  // namespace perfsim::kernels
