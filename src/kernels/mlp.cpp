#include "kernels/mlp.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

constexpr double kAdamBeta1 = 0.9;
constexpr double kAdamBeta2 = 0.999;
constexpr double kAdamEpsilon = 1e-8;

Eigen::MatrixXd standardize(const Mlp& mlp, const Eigen::MatrixXd& inputs) {
  Eigen::MatrixXd out = inputs.rowwise() - mlp.input_mean.transpose();
  return out.array().rowwise() / mlp.input_scale.transpose().array();
}

// Activations of every layer for a batch (rows = samples); activations[0] is the input.
std::vector<Eigen::MatrixXd> forward_all(const Mlp& mlp, const Eigen::MatrixXd& standardized) {
  std::vector<Eigen::MatrixXd> activations{standardized};
  for (std::size_t i = 0; i < mlp.layers.size(); ++i) {
    Eigen::MatrixXd z = activations.back() * mlp.layers[i].weights.transpose();
    z.rowwise() += mlp.layers[i].bias.transpose();
    if (i + 1 < mlp.layers.size())
      z = z.cwiseMax(0.0);
    activations.push_back(std::move(z));
  }
  return activations;
}

struct AdamState {
  std::vector<Eigen::MatrixXd> m_w, v_w;
  std::vector<Eigen::VectorXd> m_b, v_b;
};

}  // namespace

Eigen::VectorXd Mlp::predict(const Eigen::MatrixXd& inputs) const {
  if (static_cast<std::size_t>(inputs.cols()) != input_count())
    throw RuntimeFailure("mlp: " + std::to_string(inputs.cols()) + " features given, model takes " +
                         std::to_string(input_count()));
  const Eigen::MatrixXd out = forward_all(*this, standardize(*this, inputs)).back();
  return (out.col(0).array() * target_scale + target_mean).matrix();
}

Mlp train_mlp(const Eigen::MatrixXd& inputs, const Eigen::VectorXd& targets,
              const MlpTrainingOptions& options) {
  const Eigen::Index samples = inputs.rows();
  if (samples == 0 || targets.size() != samples)
    throw RuntimeFailure("train_mlp: " + std::to_string(samples) + " samples and " +
                         std::to_string(targets.size()) + " targets");
  Mlp mlp;
  mlp.input_mean = inputs.colwise().mean().transpose();
  Eigen::ArrayXd variance =
      (inputs.rowwise() - mlp.input_mean.transpose()).array().square().colwise().mean();
  mlp.input_scale = variance.sqrt().matrix();
  for (Eigen::Index j = 0; j < mlp.input_scale.size(); ++j) {
    if (mlp.input_scale[j] < 1e-12)
      mlp.input_scale[j] = 1;
  }
  mlp.target_mean = targets.mean();
  mlp.target_scale = std::sqrt((targets.array() - mlp.target_mean).square().mean());
  if (mlp.target_scale < 1e-12)
    mlp.target_scale = 1;

  std::mt19937_64 random(options.seed);
  int fan_in = static_cast<int>(inputs.cols());
  for (int layer = 0; layer <= options.hidden_layers; ++layer) {
    const int fan_out = layer == options.hidden_layers ? 1 : options.neurons_per_layer;
    std::normal_distribution<double> he(0.0, std::sqrt(2.0 / fan_in));  // He init for ReLU
    MlpLayer next{Eigen::MatrixXd(fan_out, fan_in), Eigen::VectorXd::Zero(fan_out)};
    for (Eigen::Index i = 0; i < next.weights.size(); ++i)
      next.weights.data()[i] = he(random);
    mlp.layers.push_back(std::move(next));
    fan_in = fan_out;
  }

  AdamState adam;
  for (const MlpLayer& layer : mlp.layers) {
    adam.m_w.push_back(Eigen::MatrixXd::Zero(layer.weights.rows(), layer.weights.cols()));
    adam.v_w.push_back(adam.m_w.back());
    adam.m_b.push_back(Eigen::VectorXd::Zero(layer.bias.size()));
    adam.v_b.push_back(adam.m_b.back());
  }

  const Eigen::MatrixXd x = standardize(mlp, inputs);
  const Eigen::VectorXd y = (targets.array() - mlp.target_mean) / mlp.target_scale;
  std::vector<Eigen::Index> order(static_cast<std::size_t>(samples));
  std::iota(order.begin(), order.end(), 0);
  long step = 0;
  const Eigen::Index batch_size = std::max(1, options.batch_size);
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), random);
    for (Eigen::Index start = 0; start < samples; start += batch_size) {
      const Eigen::Index count = std::min(batch_size, samples - start);
      Eigen::MatrixXd batch_x(count, x.cols());
      Eigen::VectorXd batch_y(count);
      for (Eigen::Index r = 0; r < count; ++r) {
        batch_x.row(r) = x.row(order[static_cast<std::size_t>(start + r)]);
        batch_y[r] = y[order[static_cast<std::size_t>(start + r)]];
      }
      const std::vector<Eigen::MatrixXd> act = forward_all(mlp, batch_x);
      // d(MSE)/d(output) = 2 (prediction - target) / count
      Eigen::MatrixXd delta = 2.0 * (act.back().col(0) - batch_y) / static_cast<double>(count);
      ++step;
      const double correction1 = 1 - std::pow(kAdamBeta1, static_cast<double>(step));
      const double correction2 = 1 - std::pow(kAdamBeta2, static_cast<double>(step));
      for (std::size_t i = mlp.layers.size(); i-- > 0;) {
        const Eigen::MatrixXd grad_w = delta.transpose() * act[i];
        const Eigen::VectorXd grad_b = delta.colwise().sum().transpose();
        if (i > 0) {
          delta = (delta * mlp.layers[i].weights).array() * (act[i].array() > 0).cast<double>();
        }
        adam.m_w[i] = kAdamBeta1 * adam.m_w[i] + (1 - kAdamBeta1) * grad_w;
        adam.v_w[i] = kAdamBeta2 * adam.v_w[i] + (1 - kAdamBeta2) * grad_w.cwiseAbs2();
        adam.m_b[i] = kAdamBeta1 * adam.m_b[i] + (1 - kAdamBeta1) * grad_b;
        adam.v_b[i] = kAdamBeta2 * adam.v_b[i] + (1 - kAdamBeta2) * grad_b.cwiseAbs2();
        mlp.layers[i].weights.array() -=
            options.learning_rate * (adam.m_w[i].array() / correction1) /
            ((adam.v_w[i].array() / correction2).sqrt() + kAdamEpsilon);
        mlp.layers[i].bias.array() -= options.learning_rate * (adam.m_b[i].array() / correction1) /
                                      ((adam.v_b[i].array() / correction2).sqrt() + kAdamEpsilon);
      }
    }
  }
  return mlp;
}

}  // namespace perfsim::kernels
