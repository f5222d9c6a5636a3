#pragma once
// Which kernels an op launches and what each does, from the op's name and tensor shapes.
// This covers the ops of DLRM and transformer training (GEMM ops and their backward nodes,
// embedding lookups, copies, views, element-wise and normalization ops, attention, optimizer
// updates). An op the registry does not know is reported as kUnknownOp, never as "no work".
#include <string>
#include <string_view>
#include <vector>

#include "kernels/kernel_work.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::kernels {

enum class ExpansionStatus {
  kModeled,        // kernels listed below
  kNoKernel,       // the op launches nothing (views, allocation, host-only work)
  kComposite,      // the op only launches kernels through its child ops
  kCommunication,  // timed by the collective models, not here
  kMissingShapes,  // known op, but the trace lacks the shapes the model needs
  kUnknownOp,      // no rule for this op name
};
std::string_view expansion_status_name(ExpansionStatus status);

struct OpExpansion {
  ExpansionStatus status = ExpansionStatus::kUnknownOp;
  std::vector<KernelSpec> kernels;
  std::string note;  // why the shapes were not enough, for the coverage table
  // For kMissingShapes: the category of the kernels the op is known to launch (a placeholder
  // charged to it lands in the right column of the breakdown).
  KernelCategory category = KernelCategory::kOther;
};

// The op's name with autograd wrappers removed ("autograd::engine::evaluate_function: X" -> X).
std::string_view canonical_op_name(std::string_view op_name);

// The kernels `op` launches itself, ignoring its children.
OpExpansion expand_op(const Op& op);

// Every op name the registry knows, sorted (for `perfsim models` and documentation).
std::vector<std::string> registered_op_names();

}  // namespace perfsim::kernels
