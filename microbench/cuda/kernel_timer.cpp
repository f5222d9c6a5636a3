#include "microbench/cuda/kernel_timer.hpp"

#include <chrono>
#include <vector>

#include "microbench/cuda/cuda_resources.hpp"

namespace perfsim::microbench::cuda {

KernelTiming time_on_stream(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                            const TimingPlan& plan) {
  KernelTiming timing;
  WarmupMonitor monitor(plan.warmup);
  Event window_start, window_stop;
  const auto warmup_began = std::chrono::steady_clock::now();
  while (true) {
    window_start.record(stream);
    for (int i = 0; i < plan.window_iterations; ++i)
      launch(stream);
    window_stop.record(stream);
    const double mean_us = elapsed_us(window_start, window_stop) / plan.window_iterations;
    const bool done = monitor.add_window_mean(mean_us);
    const std::chrono::duration<double, std::milli> spent =
        std::chrono::steady_clock::now() - warmup_began;
    if (done || spent.count() > plan.max_warmup_ms)
      break;
  }
  timing.warmup_windows = monitor.windows();
  timing.settled = monitor.settled();

  std::vector<Event> starts(static_cast<std::size_t>(plan.timed_iterations));
  std::vector<Event> stops(static_cast<std::size_t>(plan.timed_iterations));
  for (std::size_t i = 0; i < starts.size(); ++i) {
    starts[i].record(stream);
    launch(stream);
    stops[i].record(stream);
  }
  std::vector<double> times_us;
  for (std::size_t i = 0; i < starts.size(); ++i)
    times_us.push_back(elapsed_us(starts[i], stops[i]));
  timing.summary = summarize_times(times_us);
  return timing;
}

}  // namespace perfsim::microbench::cuda
