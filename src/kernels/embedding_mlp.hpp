#pragma once
// Inference side of the embedding-lookup MLP (seed 001 Sec. IV-C): one asset per direction,
// kernel kinds "embedding_forward" and "embedding_backward", features embedding_features():
// log2 B, E, L, D of one table and the batch's 17 reuse-factor bins. The model predicts the
// time of one table; a batched kernel over T tables takes T times that (one warp per sample
// and table, as in the heuristic of seed 000 Sec. 4.3.2.1.1).
#include <string>
#include <vector>

#include "kernels/kernel_work.hpp"
#include "kernels/mlp_asset.hpp"

namespace perfsim::kernels {

std::string embedding_asset_kind(bool backward);

// The size values embedding_features() encodes, in its order: B, E, L, D, rf_0 .. rf_16.
std::vector<double> embedding_mlp_sizes(std::int64_t batch_size, std::int64_t num_embeddings,
                                        double pooling, std::int64_t dim,
                                        const ReuseFactors& reuse_factors);

// True when work.reuse_factors is empty and the prediction assumes uniform indices
// (kernels/uniform_reuse_factors.hpp over B x L lookups per table).
bool embedding_reuse_assumed(const EmbeddingWork& work);

// T x the asset's per-table time for work. Throws RuntimeFailure when the asset's features are
// not embedding_features() (with or without dtypes).
DurationUs embedding_mlp_duration_us(const MlpKernelAsset& asset, const EmbeddingWork& work);

}  // namespace perfsim::kernels
