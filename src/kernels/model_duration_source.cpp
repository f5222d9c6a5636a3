#include "kernels/model_duration_source.hpp"

#include <algorithm>

#include "kernels/comm_contention.hpp"
#include "kernels/tensor_facts.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

Kernel kernel_of(const KernelSpec& spec) {
  Kernel kernel;
  kernel.name = spec.name;
  kernel.category = spec.category;
  kernel.stream = kDefaultComputeStream;
  kernel.launch_api =
      std::holds_alternative<HostTransferWork>(spec.work) ? "cudaMemcpyAsync" : "cudaLaunchKernel";
  return kernel;
}

bool touches_gpu(const Op& op) {
  auto on_gpu = [](const TensorRef& tensor) { return !tensor_on_host(tensor); };
  if (op.inputs.empty() && op.outputs.empty())
    return true;  // nothing recorded: assume it may launch work
  return std::any_of(op.inputs.begin(), op.inputs.end(), on_gpu) ||
         std::any_of(op.outputs.begin(), op.outputs.end(), on_gpu);
}

// The op under trace.ops[top_position] (itself included) whose own kernels hold `kernel`.
const Op* launcher_of(const Trace& trace, std::size_t top_position, const Kernel& kernel) {
  std::vector<std::size_t> stack{top_position};
  while (!stack.empty()) {
    const Op& op = trace.ops[stack.back()];
    stack.pop_back();
    for (const Kernel& own : op.kernels)
      if (&own == &kernel)
        return &op;
    for (std::int64_t child_id : op.child_ids) {
      const std::ptrdiff_t child = child_id == op.id ? -1 : trace.position_of(child_id);
      if (child >= 0)
        stack.push_back(static_cast<std::size_t>(child));
    }
  }
  return nullptr;
}

}  // namespace

DurationUs ModelDurationSource::kernel_duration_in_trace_us(const Trace& trace,
                                                            std::size_t top_position,
                                                            const Kernel& kernel) const {
  const Op& top = trace.ops[top_position];
  // Generated traces and most Kineto ops launch their own kernels: no search.
  for (const Kernel& own : top.kernels)
    if (&own == &kernel)
      return predict_kernel(top, kernel).duration_us;
  for (const Op* op = launcher_of(trace, top_position, kernel); op != nullptr && op != &top;
       op = op->parent_id == op->id ? nullptr : trace.find(op->parent_id)) {
    KernelPrediction prediction = predict_kernel(*op, kernel);
    if (prediction.model != kUnmodeledModel)
      return prediction.duration_us;
  }
  return predict_kernel(top, kernel).duration_us;
}

KernelPrediction ModelDurationSource::unmodeled() const {
  return {predictor_.device().min_kernel_duration_us.value, kUnmodeledModel};
}

void ModelDurationSource::expand_into(const Op& op, const Trace& trace, OpKernelPlan& plan) const {
  const OpExpansion own = expand_op(op);
  if (own.status == ExpansionStatus::kCommunication)
    return;
  OpKernelPlan from_children;
  bool has_children = false;
  for (std::int64_t child_id : op.child_ids) {
    const Op* child = child_id == op.id ? nullptr : trace.find(child_id);  // ET roots self-parent
    if (child) {
      has_children = true;
      expand_into(*child, trace, from_children);
    }
  }
  // Children are more specific (their shapes are the kernels' shapes), unless none of them
  // launches anything: then the op itself did (a cat or an FBGEMM lookup whose only child
  // allocates its output), and its own rule decides, uncovered included.
  const bool children_empty = from_children.kernels.empty() && from_children.uncovered.empty();
  const bool own_says_nothing =
      own.status == ExpansionStatus::kNoKernel || own.status == ExpansionStatus::kComposite;
  const auto take_children = [&] {
    plan.kernels.insert(plan.kernels.end(), from_children.kernels.begin(),
                        from_children.kernels.end());
    plan.uncovered.insert(plan.uncovered.end(), from_children.uncovered.begin(),
                          from_children.uncovered.end());
  };
  // "autograd::engine::evaluate_function: X" wraps the node X itself: with X recorded as its
  // child, the wrapper adds nothing.
  const bool autograd_wrapper = canonical_op_name(op.name).size() != op.name.size();
  if (autograd_wrapper && has_children) {
    take_children();
    return;
  }
  if (own.own_kernels_besides_children) {
    take_children();
  } else if (has_children && (!children_empty || own_says_nothing)) {
    take_children();
    return;
  }
  switch (own.status) {
    case ExpansionStatus::kModeled:
      for (const KernelSpec& spec : own.kernels) {
        KernelPrediction prediction = predictor_.predict(spec);
        prediction.duration_us =
            scaled(spec.category, contended_duration_us(spec, prediction.duration_us,
                                                        comm_load_of(op), predictor_.device()));
        plan.kernels.push_back(
            {kernel_of(spec), prediction.duration_us, std::move(prediction.model), op.id});
      }
      return;
    case ExpansionStatus::kNoKernel:
    case ExpansionStatus::kComposite:
    case ExpansionStatus::kCommunication:
      return;
    case ExpansionStatus::kMissingShapes:
    case ExpansionStatus::kUnknownOp:
      plan.uncovered.push_back({op.id, op.name, own.status, own.note});
      if (touches_gpu(op)) {
        Kernel placeholder;
        placeholder.name = "unmodeled:" + op.name;
        placeholder.category = own.category;
        placeholder.launch_api = "cudaLaunchKernel";
        plan.kernels.push_back({placeholder, unmodeled().duration_us, kUnmodeledModel, op.id});
      }
      return;
  }
}

OpKernelPlan ModelDurationSource::expand_kernels(const Op& op, const Trace& trace) const {
  OpKernelPlan plan;
  expand_into(op, trace, plan);
  return plan;
}

KernelPrediction ModelDurationSource::predict_kernel(const Op& op, const Kernel& kernel) const {
  if (kernel.category == KernelCategory::kCommunication)
    throw RuntimeFailure("kernel " + kernel.name + " of op " + std::to_string(op.id) +
                         ": communication kernels are timed by the collective models");
  const OpExpansion own = expand_op(op);
  if (own.status != ExpansionStatus::kModeled)
    return unmodeled();
  // The op's kernels that share this kernel's name, else its category.
  for (bool by_name : {true, false}) {
    auto same = [&](const std::string& name, KernelCategory category) {
      return by_name ? name == kernel.name : category == kernel.category;
    };
    double predicted_us = 0;
    std::size_t predicted_count = 0;
    std::string model;
    for (const KernelSpec& spec : own.kernels) {
      if (!same(spec.name, spec.category))
        continue;
      KernelPrediction prediction = predictor_.predict(spec);
      predicted_us += contended_duration_us(spec, prediction.duration_us, comm_load_of(op),
                                            predictor_.device());
      ++predicted_count;
      if (model.empty())
        model = std::move(prediction.model);
    }
    if (predicted_count == 0)
      continue;
    const auto measured_count = static_cast<std::size_t>(
        std::count_if(op.kernels.begin(), op.kernels.end(),
                      [&](const Kernel& other) { return same(other.name, other.category); }));
    const std::size_t share = measured_count > 0 ? measured_count : predicted_count;
    return {scaled(kernel.category, std::max(predicted_us / static_cast<double>(share),
                                             predictor_.device().min_kernel_duration_us.value)),
            model};
  }
  return unmodeled();
}

}  // namespace perfsim::kernels
