#include "collectives/levenberg_marquardt.hpp"

#include <algorithm>
#include <cmath>

#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

bool evaluate(const ResidualFunction& residuals, const Eigen::VectorXd& parameters,
              Eigen::VectorXd& out) {
  if (!residuals(parameters, out))
    return false;
  return out.allFinite();
}

// Forward differences; a parameter whose perturbed model cannot be evaluated gets a zero column
// (the damping term then keeps that direction still).
Eigen::MatrixXd jacobian(const ResidualFunction& residuals, const Eigen::VectorXd& parameters,
                         const Eigen::VectorXd& at_parameters) {
  Eigen::MatrixXd result(at_parameters.size(), parameters.size());
  Eigen::VectorXd shifted = parameters;
  Eigen::VectorXd perturbed(at_parameters.size());
  for (Eigen::Index column = 0; column < parameters.size(); ++column) {
    const double step = 1e-7 * std::max(1.0, std::abs(parameters[column]));
    shifted[column] = parameters[column] + step;
    if (evaluate(residuals, shifted, perturbed))
      result.col(column) = (perturbed - at_parameters) / step;
    else
      result.col(column).setZero();
    shifted[column] = parameters[column];
  }
  return result;
}

}  // namespace

LevenbergMarquardtResult levenberg_marquardt(const ResidualFunction& residuals,
                                             const Eigen::VectorXd& start, int residual_count,
                                             const LevenbergMarquardtOptions& options) {
  LevenbergMarquardtResult result;
  result.parameters = start;
  Eigen::VectorXd current(residual_count);
  if (!evaluate(residuals, start, current))
    throw RuntimeFailure("levenberg_marquardt: the model cannot be evaluated at the start point");
  result.cost = 0.5 * current.squaredNorm();
  double damping = options.initial_damping;
  Eigen::VectorXd trial_residuals(residual_count);
  for (result.iterations = 0; result.iterations < options.max_iterations; ++result.iterations) {
    const Eigen::MatrixXd j = jacobian(residuals, result.parameters, current);
    const Eigen::MatrixXd jtj = j.transpose() * j;
    const Eigen::VectorXd gradient = j.transpose() * current;
    bool improved = false;
    while (damping < 1e12) {
      Eigen::MatrixXd system = jtj;
      system.diagonal() += damping * jtj.diagonal().cwiseMax(1e-12);
      const Eigen::VectorXd step = system.ldlt().solve(-gradient);
      const Eigen::VectorXd trial = result.parameters + step;
      if (step.allFinite() && evaluate(residuals, trial, trial_residuals)) {
        const double trial_cost = 0.5 * trial_residuals.squaredNorm();
        if (trial_cost < result.cost) {
          const double relative_drop = (result.cost - trial_cost) / std::max(result.cost, 1e-300);
          result.parameters = trial;
          current = trial_residuals;
          result.cost = trial_cost;
          damping = std::max(damping / 10.0, 1e-12);
          improved = true;
          if (relative_drop < options.relative_cost_tolerance ||
              step.norm() < options.step_tolerance * (1.0 + result.parameters.norm()))
            result.converged = true;
          break;
        }
      }
      damping *= 10.0;
    }
    if (!improved) {
      result.converged = true;  // no downhill step at any damping: a (local) minimum
      break;
    }
    if (result.converged)
      break;
  }
  return result;
}

}  // namespace perfsim::collectives
