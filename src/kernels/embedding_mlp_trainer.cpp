#include "kernels/embedding_mlp_trainer.hpp"

#include <set>

#include "kernels/embedding_mlp.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

constexpr std::size_t kMinimumRows = 10;

}  // namespace

TrainingSet embedding_training_set(const EmbeddingBenchmark& benchmark, bool backward) {
  TrainingSet set;
  for (const EmbeddingSample& sample : benchmark.samples) {
    if (sample.backward != backward)
      continue;
    set.sizes.push_back(embedding_mlp_sizes(sample.batch_size, sample.num_embeddings,
                                            sample.pooling, sample.dim, sample.reuse_factors));
    set.dtypes.push_back(sample.dtype);
    set.time_us.push_back(sample.time_us);
  }
  return set;
}

std::vector<TrainingReport> train_embedding_assets(const EmbeddingBenchmark& benchmark,
                                                   const std::string& source,
                                                   const TrainingPlan& plan) {
  std::vector<TrainingReport> reports;
  for (bool backward : {false, true}) {
    const TrainingSet set = embedding_training_set(benchmark, backward);
    if (set.time_us.empty())
      continue;
    if (set.time_us.size() < kMinimumRows)
      throw InputError(source, kEmbeddingBenchmarkGroup,
                       std::to_string(set.time_us.size()) + " " +
                           std::string(lookup_direction_name(backward)) + " rows; need at least " +
                           std::to_string(kMinimumRows) + " to train");
    const std::set<DType> dtypes(set.dtypes.begin(), set.dtypes.end());
    MlpKernelAsset asset;
    asset.kernel_kind = embedding_asset_kind(backward);
    asset.name = asset.kernel_kind + "-" + benchmark.device;
    asset.device = benchmark.device;
    asset.features = embedding_features();
    asset.features.dtypes.assign(dtypes.begin(), dtypes.end());
    asset.training_source = source;
    reports.push_back(train_kernel_asset(set, std::move(asset), plan));
  }
  return reports;
}

}  // namespace perfsim::kernels
