#pragma once
// What one GPU kernel does, in the terms the kernel models need. The op registry derives it
// from an op's tensor shapes; the models turn it into a duration.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "kernels/conv_geometry.hpp"
#include "kernels/reuse_factor.hpp"
#include "perfsim/dtype.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::kernels {

// Element-wise, reduction and device-to-device copy kernels: roofline (seed 000 Sec. 4.3.2.1.2).
struct ElementwiseWork {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  DType dtype = DType::kFloat32;
};

// Host <-> device copies over PCIe.
struct HostTransferWork {
  double bytes = 0;
};

// C[batch][m][n] = A[batch][m][k] * B[batch][k][n].
struct GemmWork {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
  DType dtype = DType::kFloat32;
  // FP8 only: the accumulator is promoted to FP32 every few k-steps (Transformer Engine's
  // dgrad and wgrad GEMMs), which costs the main loop time; set by the op registry.
  bool split_accumulator = false;
};

// Fused (flash) attention of one kernel: `batch_heads` independent heads, each `q_len` queries
// against `kv_len` keys of `head_dim`. The work is 4 q kv d flops per head forward (Q K^T and
// P V) and 2.5 times that backward (five matmuls), the convention of the FlashAttention
// papers; a causal mask leaves half of it (the kernel skips the masked tiles).
struct AttentionWork {
  std::int64_t batch_heads = 1;
  std::int64_t q_len = 0;
  std::int64_t kv_len = 0;
  std::int64_t head_dim = 0;  // of queries and keys
  bool causal = false;
  bool backward = false;
  DType dtype = DType::kBFloat16;
  // Sliding-window attention (causal only): each query attends to the `window` most recent
  // keys, itself included; 0, or a window no shorter than the keys: none.
  std::int64_t window = 0;
  // Of values (and the output); 0: head_dim. Multi-latent attention's differs (DeepSeek-V3:
  // q/k 192, v 128).
  std::int64_t v_head_dim = 0;

  bool windowed() const { return causal && window > 0 && window < kv_len; }
  // Query-key pairs one head computes: the band of a windowed kernel, sum over queries i of
  // min(window, i + 1) = w (w + 1) / 2 + (q - w) w.
  double band_pairs() const {
    const double w = static_cast<double>(std::min(window, q_len));
    return w * (w + 1) / 2 + (static_cast<double>(q_len) - w) * w;
  }
  std::int64_t value_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
  // Per query-key pair: forward QK^T (2 d_qk) and PV (2 d_v); backward the recomputed QK^T,
  // dV, dP, dQ and dK: 6 d_qk + 4 d_v (10 d and 4 d when equal). Causal: half the pairs; a
  // window: the band's.
  double flops() const {
    const double d_qk = static_cast<double>(head_dim), d_v = static_cast<double>(value_dim());
    const double per_pair = backward ? 6.0 * d_qk + 4.0 * d_v : 2.0 * d_qk + 2.0 * d_v;
    if (windowed())
      return per_pair * static_cast<double>(batch_heads) * band_pairs();
    const double full = per_pair * static_cast<double>(batch_heads) * static_cast<double>(q_len) *
                        static_cast<double>(kv_len);
    return causal ? full / 2 : full;
  }
};

// Batched embedding-table lookup (seed 000 Sec. 4.3.2.1.1): B samples, T tables of E rows of
// D elements, L lookups pooled per sample and table.
struct EmbeddingWork {
  std::int64_t batch_size = 0;  // B
  std::int64_t rows = 0;        // E (per table)
  std::int64_t tables = 1;      // T
  double pooling_factor = 1;    // L
  std::int64_t dim = 0;         // D
  bool backward = false;
  int rows_per_block = 32;        // kernel argument of the FBGEMM/Tulloch kernels
  DType dtype = DType::kFloat32;  // of the weights
  // Of this batch's indices (seed 001 Sec. IV-C), when known; traces carry shapes, not
  // indices, so the embedding MLP assumes uniform indices when this is empty.
  std::optional<ReuseFactors> reuse_factors = std::nullopt;
};

// One cuDNN convolution pass (kernels/conv_model.hpp).
struct ConvWork {
  ConvShape shape;
  ConvPass pass = ConvPass::kForward;
  DType dtype = DType::kFloat32;
};

// CNN kernels that stream their tensors through HBM once or a few times with little math
// (batch-norm, pooling): kernels/memory_bound_model.hpp.
struct MemoryBoundWork {
  double bytes_read = 0;
  double bytes_written = 0;
  DType dtype = DType::kFloat32;
};

using KernelWork = std::variant<ElementwiseWork, HostTransferWork, GemmWork, EmbeddingWork,
                                ConvWork, MemoryBoundWork, AttentionWork>;

// A kernel an op launches, before a duration is predicted.
struct KernelSpec {
  std::string name;
  KernelCategory category = KernelCategory::kOther;
  KernelWork work;
};

}  // namespace perfsim::kernels
