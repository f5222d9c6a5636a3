#pragma once
// Kernel durations from performance models instead of measurements.
//
// Two uses:
//  1. Execution traces have ops but no kernels. expand_kernels(op, trace) lists the kernels a
//     top-level op launches (through its descendants, in order), each with a predicted
//     duration and the model that produced it; the engine launches them on
//     kDefaultComputeStream. Ops the registry cannot model are listed in `uncovered` and get
//     one placeholder kernel of the device's minimum kernel time ("unmodeled-floor") when
//     they touch GPU tensors, so that they are never silently free.
//  2. Kineto traces have measured kernels. kernel_duration_us(op, kernel) predicts a measured
//     kernel from the shapes of the op that launched it: the model's time for the kernels of
//     that name (or else of that category) in the op, shared evenly among the op's measured
//     kernels of that name (category). An op's kernels run back to back on one stream, so the
//     per-op, per-category sum is what the timeline sees.
// An op marked "contention_sms" / "contention_hbm_GBps" runs beside a communication kernel: its
// kernels are slowed by the SMs and HBM bandwidth it takes, as kernels/comm_contention.hpp
// derives. A GEMM time scale (measured over modelled
// GEMM time from an end-to-end calibration, validation/end_to_end_calibration.hpp) multiplies
// every GEMM kernel's final time, as the calibration was fitted.
#include <string>
#include <vector>

#include "kernels/kernel_predictor.hpp"
#include "kernels/op_kernel_registry.hpp"
#include "perfsim/duration_source.hpp"

namespace perfsim::kernels {

struct PredictedKernel {
  Kernel kernel;  // name, category, stream = kDefaultComputeStream, launch_api
  DurationUs predicted_us = 0;
  std::string model;  // "roofline", "analytical-gemm", "mlp:<asset>", "embedding-heuristic", ...
  std::int64_t op_id = 0;  // the op whose rule produced it
};

struct UncoveredOp {
  std::int64_t op_id = 0;
  std::string op_name;
  ExpansionStatus status = ExpansionStatus::kUnknownOp;
  std::string note;
};

struct OpKernelPlan {
  std::vector<PredictedKernel> kernels;
  std::vector<UncoveredOp> uncovered;
};

inline constexpr const char* kUnmodeledModel = "unmodeled-floor";

class ModelDurationSource final : public KernelDurationSource {
 public:
  explicit ModelDurationSource(KernelPredictor predictor, double gemm_time_scale = 1)
      : predictor_(std::move(predictor)), gemm_time_scale_(gemm_time_scale) {}

  // The kernels `op` and its descendants launch. Communication ops give no kernels here.
  OpKernelPlan expand_kernels(const Op& op, const Trace& trace) const;
  // The prediction for one kernel of `op` (measured or synthesized), with its model.
  // Throws RuntimeFailure for communication kernels (the collective models time those).
  KernelPrediction predict_kernel(const Op& op, const Kernel& kernel) const;

  DurationUs kernel_duration_us(const Op& op, const Kernel& kernel) const override {
    return predict_kernel(op, kernel).duration_us;
  }
  // Priced by the op that launched it, else by the nearest ancestor whose rule prices it (an
  // autograd wrapper's rule cannot price the GEMM or convolution its children launch), else
  // by the top-level op.
  DurationUs kernel_duration_in_trace_us(const Trace& trace, std::size_t top_position,
                                         const Kernel& kernel) const override;
  std::string_view name() const override { return "model"; }
  const KernelPredictor& predictor() const { return predictor_; }
  double gemm_time_scale() const { return gemm_time_scale_; }

 private:
  void expand_into(const Op& op, const Trace& trace, OpKernelPlan& plan) const;
  KernelPrediction unmodeled() const;

  DurationUs scaled(KernelCategory category, DurationUs duration_us) const {
    return category == KernelCategory::kGemm ? duration_us * gemm_time_scale_ : duration_us;
  }

  KernelPredictor predictor_;
  double gemm_time_scale_ = 1;
};

}  // namespace perfsim::kernels
