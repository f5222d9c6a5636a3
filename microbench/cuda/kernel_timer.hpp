#pragma once
// Times one kernel (or cuBLAS call, or copy) on a stream with CUDA events: warm-up windows
// until consecutive window means agree (seed 003 Sec. 4.1: clocks drift for hundreds of
// iterations), bounded in time, then per-iteration events around each timed launch (seed 000
// Sec. 4.3.2 times 30 iterations after warm-up).
#include <cuda_runtime_api.h>

#include <functional>

#include "microbench/host/timing_statistics.hpp"

namespace perfsim::microbench::cuda {

struct TimingPlan {
  WarmupPolicy warmup{};
  int window_iterations = 10;
  double max_warmup_ms = 2000;  // wall-clock bound on the warm-up of one case
  int timed_iterations = 30;
};

struct KernelTiming {
  TimingSummary summary;
  int warmup_windows = 0;
  bool settled = false;
};

KernelTiming time_on_stream(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                            const TimingPlan& plan);

}  // namespace perfsim::microbench::cuda
