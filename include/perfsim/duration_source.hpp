#pragma once
// Where the engine gets kernel and communication durations from. Implementations: measured
// (from a profiler trace of the same run), and the model-based sources of src/ and
// collectives/.
#include <optional>
#include <string>
#include <string_view>

#include "perfsim/comm.hpp"
#include "perfsim/trace.hpp"
#include "perfsim/units.hpp"

namespace perfsim {

class KernelDurationSource {
 public:
  virtual ~KernelDurationSource() = default;
  // Predicted duration of kernel `kernel` launched by `op`. Throws InputError when the
  // source cannot give one (a measured source on a kernel without a measurement).
  virtual DurationUs kernel_duration_us(const Op& op, const Kernel& kernel) const = 0;
  // Duration of `kernel`, recorded under the top-level op trace.ops[top_position] and launched
  // by it or one of its descendants. Default: kernel_duration_us of the top-level op.
  virtual DurationUs kernel_duration_in_trace_us(const Trace& trace, std::size_t top_position,
                                                 const Kernel& kernel) const {
    return kernel_duration_us(trace.ops[top_position], kernel);
  }
  virtual std::string_view name() const = 0;
};

// One collective as the engine sees it: which group, its position among that group's
// collectives on this rank, and what it moves.
struct CollectiveCall {
  std::string group;  // ProcessGroup::name, "" = world
  int group_size = 0;
  std::size_t index_in_group = 0;
  const CommInfo* comm = nullptr;
  const Op* op = nullptr;
  // Summed measured duration of the collective's communication kernels on this rank, when
  // the trace recorded them (Kineto).
  std::optional<DurationUs> measured_kernel_time_us;
};

// How members' durations for one collective combine. A model gives each member the duration
// of the collective as that member sees it (all-to-allv: its own sent/received bytes), so the
// collective takes the longest. A measured source gives each member its own kernel time, which
// includes waiting for late peers, so the collective takes the shortest.
enum class DurationCombine { kLongest, kShortest };

class CommDurationSource {
 public:
  virtual ~CommDurationSource() = default;
  virtual DurationCombine combine() const { return DurationCombine::kLongest; }
  // Duration of the collective once every member has arrived (the same on every member).
  virtual DurationUs collective_duration_us(const CollectiveCall& call) const = 0;
  virtual std::string_view name() const = 0;
};

}  // namespace perfsim
