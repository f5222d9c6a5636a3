#pragma once
// When Megatron-LM's FusedScaleMaskSoftmax may run its fused CUDA kernel for causal
// (upper-triangular) self-attention; otherwise it falls back to PyTorch's own ops
// (fused_softmax.py, forward_torch_softmax), several memory-bound kernels and launches each.
#include <cstdint>

namespace perfsim::generators::llm {

// Causal masked softmax over `attention_batches` (micro-batch x heads on this rank) rows of
// `seq` x `seq` scores in fp16/bf16: Megatron's is_kernel_available (16 < sk <= 4096, sq and
// sk multiples of 4, attention_batches a multiple of 4 and of the kernel's batches per block).
bool megatron_fused_causal_softmax_available(std::int64_t attention_batches, std::int64_t seq);

// Rows of scores one 128-thread block of the fused kernel handles (get_batch_per_block in
// scaled_upper_triang_masked_softmax.h): a warp per row up to 32 wide, two rows per warp while
// the padded row fits in 128 elements.
std::int64_t megatron_fused_softmax_batches_per_block(std::int64_t seq);

}  // namespace perfsim::generators::llm
