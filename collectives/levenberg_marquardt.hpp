#pragma once
// A small Levenberg-Marquardt least-squares solver (Marquardt's diagonal scaling, forward-
// difference Jacobian) over Eigen vectors. Our own instead of Eigen's unsupported module so that
// a failed evaluation (a parameter set the model rejects) simply counts as a rejected step.
#include <functional>

#include <Eigen/Dense>

namespace perfsim::collectives {

// Fills `residuals` (already sized) for `parameters`; returns false when the parameters are
// outside the model's domain.
using ResidualFunction =
    std::function<bool(const Eigen::VectorXd& parameters, Eigen::VectorXd& residuals)>;

struct LevenbergMarquardtOptions {
  int max_iterations = 200;
  double initial_damping = 1e-3;
  double relative_cost_tolerance = 1e-12;
  double step_tolerance = 1e-10;
};

struct LevenbergMarquardtResult {
  Eigen::VectorXd parameters;
  double cost = 0.0;  // half the sum of squared residuals
  int iterations = 0;
  bool converged = false;
};

// Minimises 0.5 * |residuals(p)|^2 from `start`. Throws RuntimeFailure when the residuals
// cannot be evaluated at `start`.
LevenbergMarquardtResult levenberg_marquardt(const ResidualFunction& residuals,
                                             const Eigen::VectorXd& start, int residual_count,
                                             const LevenbergMarquardtOptions& options = {});

}  // namespace perfsim::collectives
