#pragma once
// Training the embedding-lookup MLPs of seed 001 Sec. IV-C from a /benchmarks/embedding table:
// one asset per direction present ("embedding_forward-<device>", "embedding_backward-<device>"),
// each with the trainer of kernels/mlp_trainer.hpp (80/20 split, GMAE/MAPE on the 20%).
#include <string>
#include <vector>

#include "kernels/embedding_benchmark_table.hpp"
#include "kernels/mlp_trainer.hpp"

namespace perfsim::kernels {

// The benchmark rows of one direction as size rows for embedding_features().
TrainingSet embedding_training_set(const EmbeddingBenchmark& benchmark, bool backward);

// Throws InputError(source, "/benchmarks/embedding", ...) when a direction present has fewer
// than 10 rows (too few to split).
std::vector<TrainingReport> train_embedding_assets(const EmbeddingBenchmark& benchmark,
                                                   const std::string& source,
                                                   const TrainingPlan& plan);

}  // namespace perfsim::kernels
