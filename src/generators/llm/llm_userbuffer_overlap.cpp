// Transformer Engine's userbuffer TP overlap (ub_tp_comm_overlap) as its default ub config runs
// it (constants and their source: llm_parallel_config.hpp). Each overlap is emitted as the ops
// TE launches, so the engine times the overlap itself: a chunk's transfer on its own stream,
// the GEMM chunk beside it on the compute stream, the next chunk's GEMM waiting for the chunk
// it reads. What stays exposed comes out of the traversal (the per-step maximum of transfer and
// GEMM, each step's p2p latency, the last reduce-scatter chunk), not from a formula here.
// The copy engines' and userbuffer kernels' HBM traffic slows the GEMMs beside them
// (ParallelConfig::bus_rates, kernels/comm_contention.hpp). Not modelled: userbuffer
// registration (done once at start-up), TE's aggregate and atomic-GEMM variants.
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {
namespace {

// Rows [index x rows, (index + 1) x rows) of `tensor` as a [rows, cols] view. The offset lets
// the memory replay see every chunk written inside the one storage (a write at offset 0 of a
// live storage would read as a new allocation).
TensorRef chunk_view(const TensorRef& tensor, std::int64_t index, std::int64_t rows,
                     std::int64_t cols) {
  TensorRef ref = RankTraceBuilder::view(tensor, {rows, cols});
  ref.offset_elements = tensor.offset_elements + index * rows * cols;
  return ref;
}

}  // namespace

void LayerEmitter::ring_exchange_gemms(TensorRef chunk, const TensorRef& operand, std::int64_t n,
                                       const TensorRef& out) {
  const std::int64_t rows = shapes_.seq_local * shapes_.batch, h = shapes_.hidden;
  for (int step = 0; step < tp_.size; ++step) {
    const bool exchanging = step + 1 < tp_.size;
    const TensorRef next = exchanging ? exchange_tp_chunk(chunk) : chunk;
    // The copy engines push the chunk to the next rank beside this GEMM: no SMs, HBM traffic.
    ContentionScope beside(
        builder_, 0,
        exchanging ? tp_hbm_GBps(CollectiveKind::kSend, kernels::CommDataPath::kPeerDirect) : 0);
    builder_.compute(
        "aten::mm",
        {RankTraceBuilder::view(chunk, {rows, h}), RankTraceBuilder::view(operand, {h, n})},
        {chunk_view(out, step, rows, n)}, KernelCategory::kGemm, 2.0 * rows * n * h);
    chunk = next;
  }
}

TensorRef LayerEmitter::exchange_tp_chunk(const TensorRef& chunk) {
  builder_.communicate({CollectiveKind::kSend, "", 2, tp_.next_rank, kTensorSendStream}, chunk,
                       chunk);
  TensorRef received = builder_.tensor(chunk.shape, chunk.dtype);
  builder_.communicate({CollectiveKind::kRecv, "", 2, tp_.previous_rank, kTensorRecvStream},
                       received, received);
  return received;
}

// TE CommOverlapP2P::split_overlap_ag: at step i the GEMM reads the chunk in hand (the local
// one first) while that chunk goes to the next TP rank and the previous rank's arrives; TP
// GEMMs of seq_local x b rows each, TP - 1 exchanges. With FP8 the all-gather buffer is FP8
// (TE fp8_buf for all-gather layers): the local rows are cast once, before the ring.
TensorRef LayerEmitter::ring_exchange_forward(const TensorRef& local, const TensorRef& weight,
                                              const Fp8Copy& fp8, std::int64_t n,
                                              TensorRef* saved_local) {
  const std::int64_t rows = shapes_.seq_local * shapes_.batch, h = shapes_.hidden;
  // The QKV / FC1 input: its norm is fused into the layer (TE LayerNormLinear).
  const TensorRef chunk = shapes_.fp8_linear
                              ? cast_transpose(local, rows, h, {}, kAmaxNormTpReduced)
                              : RankTraceBuilder::view(local, {rows, h});
  // The layer saves those FP8 rows for its backward's re-gather (MlpSaved) where that gather
  // is in FP8 (fp8_all_gather); else the backward gathers the bf16 rows again.
  if (saved_local && shapes_.fp8_linear && shapes_.fp8_all_gather)
    *saved_local = chunk;
  const TensorRef operand = shapes_.fp8_linear ? fp8_weight_operand(fp8, false, {h, n}) : weight;
  const TensorRef out = activation({shapes_.tokens(), n});
  ring_exchange_gemms(chunk, operand, n, out);
  return out;
}

// TE CommOverlapBase::split_overlap_rs: the GEMM in kUserbufferPipelineSplits chunks of rows;
// each chunk is reduce-scattered over TP by a userbuffer kernel while the next chunk's GEMM
// runs; the last chunk's reduce-scatter is exposed. set_sm_margin: every chunk GEMM runs on the
// SMs the reduce-scatter kernel leaves.
TensorRef LayerEmitter::pipelined_reduce_scatter_forward(const TensorRef& input,
                                                         const TensorRef& weight,
                                                         const Fp8Copy& fp8, std::int64_t k,
                                                         TensorRef* saved_input) {
  const std::int64_t tokens = shapes_.tokens(), h = shapes_.hidden;
  const std::int64_t rows = tokens / kUserbufferPipelineSplits;
  TensorRef x = input;
  TensorRef operand = weight;
  if (shapes_.fp8_linear) {
    x = input.dtype == DType::kFloat8
            ? input
            : cast_transpose(input, tokens, k, {}, kAmaxKernel, saved_input);
    operand = fp8_weight_operand(fp8, false, {k, h});
  }
  TensorRef local = hidden_local();
  ContentionScope margin(
      builder_, kUserbufferPipelineCommSms,
      tp_hbm_GBps(CollectiveKind::kReduceScatter, kernels::CommDataPath::kPeerDirect));
  for (int split = 0; split < kUserbufferPipelineSplits; ++split) {
    TensorRef part = activation({rows, h});
    builder_.compute(
        "aten::mm", {RankTraceBuilder::view(x, {rows, k}), RankTraceBuilder::view(operand, {k, h})},
        {part}, KernelCategory::kGemm, 2.0 * rows * h * k);
    // Every chunk lands in the same local tensor: its readers wait for the last one.
    builder_.communicate(
        {CollectiveKind::kReduceScatter, tp_.name, tp_.size, -1, kTensorParallelStream}, part,
        chunk_view(local, split, rows / tp_.size, h));
  }
  return local;
}

// The data gradient of a row-parallel layer (proj, fc2) reads the output gradient gathered over
// TP: TE ring-exchanges its chunks (E5M2 with FP8) under the data-gradient GEMM chunks and
// keeps the gathered buffer for the weight gradient.
TensorRef LayerEmitter::ring_exchange_data_gradient(const TensorRef& grad_local,
                                                    const TensorRef& weight, const Fp8Copy& fp8,
                                                    std::int64_t in_width, TensorRef& gathered) {
  const std::int64_t rows = shapes_.seq_local * shapes_.batch, h = shapes_.hidden;
  const TensorRef chunk =
      backward_operand(RankTraceBuilder::view(grad_local, {rows, h}), rows, h, true);
  const TensorRef weight_t = shapes_.fp8_linear ? fp8_weight_operand(fp8, true, {h, in_width})
                                                : RankTraceBuilder::view(weight, {h, in_width});
  const TensorRef grad_input = activation({shapes_.tokens(), in_width});
  ring_exchange_gemms(chunk, weight_t, in_width, grad_input);
  gathered = builder_.tensor({shapes_.tokens(), h}, chunk.dtype);
  return grad_input;
}

}  // namespace perfsim::generators::llm
