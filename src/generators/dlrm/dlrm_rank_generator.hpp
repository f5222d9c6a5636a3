#pragma once
// One rank's trace of one DLRM training iteration (seed 001 Sec. III-B, V-B1): embedding
// tables model parallel by a ShardingPlan, MLPs data parallel. Ops are named and shaped as
// PyTorch records them (aten::addmm, aten::embedding_bag, aten::bmm, ..., nccl:all_to_all with
// a CommInfo carrying all-to-allv split sizes, nccl:all_reduce), without durations: the kernel
// models price compute ops from their shapes, the collective model the communication.
//
// Order on a rank (B = batch per GPU, G = B x ranks):
//   forward:  all-to-allv of the sparse indices to the table owners (optional), bottom MLP
//             (addmm + relu), one embedding_bag per local table over the global batch G,
//             all-to-allv of pooled embeddings (each peer gets its B samples), dot interaction
//             (cat, bmm, gather of the lower triangle, cat), top MLP (addmm + relu, sigmoid),
//             MSE loss;
//   backward: loss and top MLP in reverse, interaction backward, all-to-allv of embedding
//             gradients back to the owners, bottom MLP backward (overlapping it), one
//             embedding-bag backward per local table (the sparse update is fused into it, as in
//             FBGEMM), DDP all-reduces of MLP gradients in buckets as soon as each bucket is
//             complete (overlapping the rest of the backward pass);
//   optimizer: one SGD update per bucket, after its all-reduce.
#include <cstdint>
#include <vector>

#include "generators/dlrm/dlrm_config.hpp"
#include "generators/dlrm/dlrm_sharders.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::generators::dlrm {

// All-to-alls on one NCCL stream, DDP all-reduces on another (as the fixture's Kineto traces
// show: two NCCL streams per rank).
inline constexpr StreamId kAllToAllStream = kDefaultCommStream;
inline constexpr StreamId kAllReduceStream = kDefaultCommStream + 1;

// Throws InputError when the plan does not fit the config or `rank` is outside the world.
Trace generate_dlrm_rank(const DlrmConfig& config, const ShardingPlan& plan, int rank);

// Split sizes in elements, one per peer, of this rank's all-to-allv.
struct AllToAllSplits {
  std::vector<std::int64_t> send_elements;
  std::vector<std::int64_t> receive_elements;
};
// Forward pooled embeddings: rank r sends B x |T_r| x D to every peer and receives
// B x |T_q| x D from peer q. The backward all-to-all swaps the two.
AllToAllSplits pooled_embedding_splits(const DlrmConfig& config, const ShardingPlan& plan,
                                       int rank);
// Sparse indices (int32): rank r sends each owner q its B samples' lookups of q's tables and
// receives every peer's lookups of its own tables.
AllToAllSplits index_splits(const DlrmConfig& config, const ShardingPlan& plan, int rank);

// One DDP bucket: gradients of whole parameters, filled in reverse parameter order (top MLP
// last layer first), closed at 1 MiB for the first bucket and config.bucket_bytes after
// (PyTorch DDP).
struct GradientBucket {
  std::int64_t elements = 0;
  int ready_after_step = 0;  // backward MLP layer index: top layers last..0, then bottom
};
std::vector<GradientBucket> ddp_buckets(const DlrmConfig& config);

// MLP parameters (weights and biases of both MLPs), replicated on every rank.
std::int64_t mlp_parameter_count(const DlrmConfig& config);

}  // namespace perfsim::generators::dlrm
