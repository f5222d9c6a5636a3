#include "mpi_sim/engine/measured_durations.hpp"

#include "perfsim/error.hpp"

namespace perfsim::engine {

DurationUs MeasuredKernelDurations::kernel_duration_us(const Op& op, const Kernel& kernel) const {
  if (!kernel.measured_duration_us) {
    throw InputError(
        "", "op " + std::to_string(op.id) + " '" + op.name + "', kernel '" + kernel.name + "'",
        "no measured duration in the trace (load a Kineto trace, or use a "
        "model-based duration source)");
  }
  return *kernel.measured_duration_us;
}

DurationUs MeasuredCommDurations::collective_duration_us(const CollectiveCall& call) const {
  if (!call.measured_kernel_time_us) {
    const std::string where =
        call.op ? "op " + std::to_string(call.op->id) + " '" + call.op->name + "'" : "collective";
    throw InputError("", where,
                     "collective has no measured communication kernel (load a Kineto trace, or "
                     "use the collective model)");
  }
  return *call.measured_kernel_time_us;
}

}  // namespace perfsim::engine
