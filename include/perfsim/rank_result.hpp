#pragma once
// What one simulated rank reports after its iteration.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "perfsim/trace.hpp"
#include "perfsim/units.hpp"

namespace perfsim {

inline constexpr std::size_t kCategoryCount = 5;  // KernelCategory values
using CategoryTimes = std::array<DurationUs, kCategoryCount>;

struct StreamBreakdown {
  StreamId stream = 0;
  DurationUs busy_us = 0;
  CategoryTimes by_category_us{};
};

struct GroupTraffic {
  std::int64_t collectives = 0;
  Bytes bytes = 0;            // bytes this rank sent (bytes_in) in the group
  DurationUs time_us = 0;     // summed collective durations
  DurationUs exposed_us = 0;  // time compute waited for this group's collectives
  // The part of exposed_us before the collective started: waiting for the other members (for
  // pipeline point-to-point, the neighbouring stage: the bubble), not for the transfer.
  DurationUs exposed_before_start_us = 0;
};

// One slice of the optional timeline. lane -1 is the CPU; otherwise a stream id.
struct TimelineSlice {
  std::string name;
  std::int64_t lane = -1;
  TimestampUs start_us = 0;
  DurationUs duration_us = 0;
  KernelCategory category = KernelCategory::kOther;
  std::string collective_key;  // "group#index" on collective slices, for flow arrows
};

// GPU time of one labelled step of a rank's program (an LLM pipeline stage's forward or
// backward of one micro-batch: the report's schedule chart): from the start of the first kernel
// its ops launch to the end of the last, collectives excluded (their waits show as gaps).
struct StepSpan {
  std::string phase;  // "forward", "backward"
  int micro_batch = 0;
  int chunk = 0;              // model chunk (virtual stage on the rank); 0 without interleaving
  TimestampUs start_us = -1;  // -1: the step launched no kernel
  TimestampUs end_us = -1;
};

struct RankResult {
  int sim_rank = 0;
  TimestampUs iteration_us = 0;  // max(CPU clock, every stream clock)
  TimestampUs cpu_us = 0;
  DurationUs kernel_time_us = 0;  // sum of every kernel and collective duration
  DurationUs gpu_busy_us = 0;     // union over streams: time any stream was busy
  DurationUs gpu_idle_us = 0;     // iteration_us - gpu_busy_us
  CategoryTimes by_category_us{};
  std::vector<StreamBreakdown> streams;
  std::map<std::string, GroupTraffic> groups;
  std::size_t ops = 0;
  std::size_t kernels = 0;
  std::vector<TimelineSlice> timeline;
  std::vector<StepSpan> steps;  // the program's labelled steps (RankProgram::steps), in order
};

}  // namespace perfsim
