#include "kernels/mlp_trainer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>

#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

struct Split {
  std::vector<std::size_t> train;
  std::vector<std::size_t> validation;
  std::vector<std::size_t> test;
};

Split split_indices(std::size_t count, const TrainingPlan& plan) {
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 random(plan.split_seed);
  std::shuffle(order.begin(), order.end(), random);
  const auto test_count = static_cast<std::size_t>(std::round(plan.held_back_fraction * count));
  Split split;
  split.test.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(test_count));
  std::vector<std::size_t> rest(order.begin() + static_cast<std::ptrdiff_t>(test_count),
                                order.end());
  const auto validation_count =
      static_cast<std::size_t>(std::round(plan.validation_fraction * rest.size()));
  split.validation.assign(rest.begin(),
                          rest.begin() + static_cast<std::ptrdiff_t>(validation_count));
  split.train.assign(rest.begin() + static_cast<std::ptrdiff_t>(validation_count), rest.end());
  return split;
}

Eigen::MatrixXd rows_of(const Eigen::MatrixXd& all, const std::vector<std::size_t>& indices) {
  Eigen::MatrixXd out(static_cast<Eigen::Index>(indices.size()), all.cols());
  for (std::size_t i = 0; i < indices.size(); ++i)
    out.row(static_cast<Eigen::Index>(i)) = all.row(static_cast<Eigen::Index>(indices[i]));
  return out;
}

Accuracy accuracy_on(const Mlp& mlp, const Eigen::MatrixXd& features,
                     const std::vector<double>& time_us, const std::vector<std::size_t>& indices) {
  const Eigen::VectorXd log_predicted = mlp.predict(rows_of(features, indices));
  std::vector<double> predicted, measured;
  for (std::size_t i = 0; i < indices.size(); ++i) {
    predicted.push_back(std::exp2(log_predicted[static_cast<Eigen::Index>(i)]));
    measured.push_back(time_us[indices[i]]);
  }
  return prediction_accuracy(predicted, measured);
}

}  // namespace

std::vector<MlpTrainingOptions> default_training_grid(int epochs) {
  std::vector<MlpTrainingOptions> grid;
  for (int layers : {3, 4})
    for (int neurons : {64, 128})
      for (double rate : {1e-3, 3e-3})
        grid.push_back({layers, neurons, rate, epochs, 64, 1});
  return grid;
}

TrainingReport train_kernel_asset(const TrainingSet& set, MlpKernelAsset asset_template,
                                  const TrainingPlan& plan) {
  const std::size_t count = set.time_us.size();
  if (count < 10 || set.sizes.size() != count || set.dtypes.size() != count)
    throw RuntimeFailure("train: need at least 10 consistent samples, got " +
                         std::to_string(count));
  const Eigen::MatrixXd features = asset_template.features.encode_all(set.sizes, set.dtypes);
  Eigen::VectorXd log_time(static_cast<Eigen::Index>(count));
  for (std::size_t i = 0; i < count; ++i)
    log_time[static_cast<Eigen::Index>(i)] = std::log2(set.time_us[i]);

  const Split split = split_indices(count, plan);
  const std::vector<std::size_t>& fit = split.train;
  const Eigen::MatrixXd fit_x = rows_of(features, fit);
  Eigen::VectorXd fit_y(static_cast<Eigen::Index>(fit.size()));
  for (std::size_t i = 0; i < fit.size(); ++i)
    fit_y[static_cast<Eigen::Index>(i)] = log_time[static_cast<Eigen::Index>(fit[i])];

  const std::vector<MlpTrainingOptions> grid =
      plan.candidates.empty() ? default_training_grid(300) : plan.candidates;
  TrainingReport report;
  double best = std::numeric_limits<double>::infinity();
  for (const MlpTrainingOptions& options : grid) {
    Mlp mlp = train_mlp(fit_x, fit_y, options);
    const double score = split.validation.empty()
                             ? accuracy_on(mlp, features, set.time_us, fit).gmae_pct
                             : accuracy_on(mlp, features, set.time_us, split.validation).gmae_pct;
    if (score < best) {
      best = score;
      report.asset.mlp = std::move(mlp);
      report.chosen = options;
    }
  }
  report.chosen_validation_gmae_pct = best;
  report.training_samples = fit.size();
  report.held_back = accuracy_on(report.asset.mlp, features, set.time_us, split.test);
  Mlp chosen = std::move(report.asset.mlp);
  report.asset = std::move(asset_template);
  report.asset.mlp = std::move(chosen);
  report.asset.gmae_pct = report.held_back.gmae_pct;
  report.asset.mape_pct = report.held_back.mape_pct;
  return report;
}

TrainingReport train_gemm_asset(const GemmBenchmark& benchmark, const std::string& source,
                                std::int64_t modulo, const TrainingPlan& plan) {
  TrainingSet set;
  std::set<DType> dtypes;
  for (const GemmSample& sample : benchmark.samples) {
    set.sizes.push_back({static_cast<double>(sample.m), static_cast<double>(sample.n),
                         static_cast<double>(sample.k), static_cast<double>(sample.batch)});
    set.dtypes.push_back(sample.dtype);
    set.time_us.push_back(sample.time_us);
    dtypes.insert(sample.dtype);
  }
  MlpKernelAsset asset;
  asset.name = "gemm-" + benchmark.device;
  asset.kernel_kind = "gemm";
  asset.device = benchmark.device;
  asset.features = gemm_features(modulo, std::vector<DType>(dtypes.begin(), dtypes.end()));
  asset.training_source = source;
  return train_kernel_asset(set, std::move(asset), plan);
}

}  // namespace perfsim::kernels
