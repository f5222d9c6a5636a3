#pragma once
// A multilayer perceptron in Eigen (seed 000 Sec. 4.3.2.2): ReLU hidden layers, a linear
// output, inputs standardized per feature and the target standardized; trained with Adam on
// the mean squared error. Callers pass log-scaled features and targets (seed 000: "taking
// logarithm values of both the sizes and the results"); the network itself is scale-agnostic.
#include <cstdint>
#include <vector>

#include <Eigen/Dense>

namespace perfsim::kernels {

struct MlpLayer {
  Eigen::MatrixXd weights;  // outputs x inputs
  Eigen::VectorXd bias;     // outputs
};

struct Mlp {
  std::vector<MlpLayer> layers;  // the last one is linear, the others ReLU
  Eigen::VectorXd input_mean;
  Eigen::VectorXd input_scale;  // divide by it (1 for a constant feature)
  double target_mean = 0;
  double target_scale = 1;

  std::size_t input_count() const { return static_cast<std::size_t>(input_mean.size()); }
  // One prediction per row of `inputs` (rows = samples), in the target's units.
  Eigen::VectorXd predict(const Eigen::MatrixXd& inputs) const;
};

// The subset of seed 000 Table 4.2 that trains in minutes on two cores: hidden layers and
// neurons per layer are taken from the table's low end; Adam only.
struct MlpTrainingOptions {
  int hidden_layers = 3;
  int neurons_per_layer = 128;
  double learning_rate = 1e-3;
  int epochs = 300;
  int batch_size = 64;
  std::uint64_t seed = 1;  // deterministic initialization and shuffling
};

// Fits y ~ f(x). Throws RuntimeFailure on empty or mismatched data.
Mlp train_mlp(const Eigen::MatrixXd& inputs, const Eigen::VectorXd& targets,
              const MlpTrainingOptions& options);

}  // namespace perfsim::kernels
