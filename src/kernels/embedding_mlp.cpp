#include "kernels/embedding_mlp.hpp"

#include <algorithm>

#include "kernels/mlp_features.hpp"
#include "kernels/uniform_reuse_factors.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

bool has_embedding_layout(const FeatureDefinition& features) {
  const FeatureDefinition expected = embedding_features();
  if (features.sizes.size() != expected.sizes.size())
    return false;
  for (std::size_t i = 0; i < expected.sizes.size(); ++i) {
    if (features.sizes[i].name != expected.sizes[i].name ||
        features.sizes[i].log_scale != expected.sizes[i].log_scale)
      return false;
  }
  return true;
}

}  // namespace

std::string embedding_asset_kind(bool backward) {
  return backward ? "embedding_backward" : "embedding_forward";
}

std::vector<double> embedding_mlp_sizes(std::int64_t batch_size, std::int64_t num_embeddings,
                                        double pooling, std::int64_t dim,
                                        const ReuseFactors& reuse_factors) {
  std::vector<double> sizes{static_cast<double>(batch_size), static_cast<double>(num_embeddings),
                            pooling, static_cast<double>(dim)};
  sizes.insert(sizes.end(), reuse_factors.begin(), reuse_factors.end());
  return sizes;
}

bool embedding_reuse_assumed(const EmbeddingWork& work) {
  return !work.reuse_factors.has_value();
}

DurationUs embedding_mlp_duration_us(const MlpKernelAsset& asset, const EmbeddingWork& work) {
  if (!has_embedding_layout(asset.features))
    throw RuntimeFailure("mlp:" + asset.name + " is a " + asset.kernel_kind +
                         " asset without the embedding features B, E, L, D, rf0..rf16");
  const ReuseFactors reuse =
      work.reuse_factors
          ? *work.reuse_factors
          : uniform_reuse_factors(static_cast<double>(work.batch_size) * work.pooling_factor,
                                  std::max<std::int64_t>(1, work.rows));
  const std::vector<double> sizes =
      embedding_mlp_sizes(work.batch_size, work.rows, work.pooling_factor, work.dim, reuse);
  return static_cast<double>(std::max<std::int64_t>(1, work.tables)) *
         asset.predict_us(sizes, work.dtype);
}

}  // namespace perfsim::kernels
