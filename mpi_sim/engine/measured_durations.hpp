#pragma once
// The "measured" duration sources: kernel and collective times as a profiler recorded them
// in the same run (Kineto). For a collective, each member offers the summed duration of its
// communication kernels and the engine takes the minimum over members: the last rank to
// arrive waits least, so its kernel time is the transfer itself, while early ranks' kernels
// include waiting for the others.
#include "perfsim/duration_source.hpp"

namespace perfsim::engine {

class MeasuredKernelDurations final : public KernelDurationSource {
 public:
  DurationUs kernel_duration_us(const Op& op, const Kernel& kernel) const override;
  std::string_view name() const override { return "measured"; }
};

class MeasuredCommDurations final : public CommDurationSource {
 public:
  DurationUs collective_duration_us(const CollectiveCall& call) const override;
  DurationCombine combine() const override { return DurationCombine::kShortest; }
  std::string_view name() const override { return "measured (min over ranks of NCCL kernel time)"; }
};

}  // namespace perfsim::engine
